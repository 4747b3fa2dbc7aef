/*
 * fuzz_jschema.c: libFuzzer target for the JSON Schema validator of
 * common/jschema.c.  The input is a schema and an instance, split at the
 * first NUL byte or newline.  A schema that jschema_check() accepts is
 * applied to the instance; every refusal must say what and where.  An
 * instance that is not too deep must also match itself as a "const" and
 * an "enum", and an array of copies of it must fail "uniqueItems", by the
 * pairwise path (2 copies) and by the hashed one (9 copies).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len);

#define LOAD_FLAGS (JSON_DECODE_ANY | JSON_ALLOW_NUL)

/* A failed call must leave a message, and both strings terminated. */
static void
check_error(const struct jschema_error *e)
{
	if (e->message[0] == '\0' ||
	    memchr(e->path, '\0', sizeof(e->path)) == NULL ||
	    memchr(e->message, '\0', sizeof(e->message)) == NULL)
		abort();
}

/* Validates v against a schema {key: value}, which takes ownership. */
static int
against(const char *key, json_t *value, const json_t *v)
{
	struct jschema_error e;
	json_t *s = json_pack("{s:o}", key, value);
	int rc;

	if (s == NULL || jschema_check(s, &e) == -1)
		abort();
	rc = jschema_validate(s, v, &e);
	if (rc == -1)
		check_error(&e);
	json_decref(s);
	return rc;
}

/* An array of n deep copies of v, so that no element is v itself. */
static json_t *
copies(const json_t *v, int n)
{
	json_t *a = json_array();

	for (int i = 0; a != NULL && i < n; i++)
		json_array_append_new(a, json_deep_copy(v));
	return a;
}

/* What every instance must do against schemas made from itself. */
static void
self_checks(json_t *v)
{
	struct jschema_error e;
	json_t *a;

	if (jschema_validate(json_true(), v, &e) == -1) {
		check_error(&e); /* too deep: nothing else applies */
		return;
	}
	if (against("const", json_deep_copy(v), v) != 0 ||
	    against("enum", json_pack("[iO]", 0, v), v) != 0)
		abort();
	for (int n = 2; n <= 9; n += 7) {
		a = copies(v, n);
		if (jschema_validate(json_true(), a, &e) == 0 &&
		    against("uniqueItems", json_true(), a) != -1)
			abort();
		json_decref(a);
	}
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
	const unsigned char *cut = data;
	struct jschema_error e;
	json_t *schema, *inst;
	size_t n;

	while (cut < data + len && *cut != '\0' && *cut != '\n')
		cut++;
	n = (size_t)(cut - data);
	schema = json_loadb((const char *)data, n, LOAD_FLAGS, NULL);
	inst = cut < data + len
	    ? json_loadb((const char *)cut + 1, len - n - 1, LOAD_FLAGS, NULL)
	    : NULL;
	if (schema != NULL) {
		if (jschema_check(schema, &e) == -1)
			check_error(&e);
		else if (inst != NULL &&
		    jschema_validate(schema, inst, &e) == -1)
			check_error(&e);
	}
	if (inst != NULL)
		self_checks(inst);
	json_decref(schema);
	json_decref(inst);
	return 0;
}
