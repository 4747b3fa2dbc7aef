/*
 * fuzz_datasource.c: libFuzzer target for seed 004's data-source strings
 * (common/datasource.c).  The input is a string; whatever parses is
 * compiled against a registered table, and what compiles must keep every
 * value out of the SQL text (ds_table.h).  A refusal must say why.  The
 * input is also read as a registration document (POST /data-sources):
 * what it accepts must be its own normal form.
 * Everything is freed: ASan's leak check runs at exit.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ds_table.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len);

/* data as a registration: refused with a reason, or its own normal form. */
static void
registration(const unsigned char *data, size_t len)
{
	struct schedule_error e;
	json_t *r, *again;
	char *text;

	memset(&e, 0, sizeof(e));
	if ((r = ds_registration_parse((const char *)data, len, &e)) == NULL) {
		if (e.code[0] == '\0' || e.message[0] == '\0')
			abort();
		return;
	}
	if ((text = json_dumps(r, JSON_COMPACT)) == NULL)
		abort();
	again = ds_registration_parse(text, strlen(text), &e);
	if (again == NULL || !json_equal(again, r))
		abort();
	json_decref(again);
	json_decref(r);
	free(text);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
	char *s = malloc(len + 1), err[256];
	struct ds_spec d;
	struct ds_query q;

	if (s == NULL)
		return 0;
	memcpy(s, data, len);
	s[len] = '\0';
	err[0] = '\0';
	if (ds_parse(s, &d, err, sizeof(err)) == -1) {
		if (err[0] == '\0')
			abort();
	} else {
		err[0] = '\0';
		if (ds_compile(&d, &fuzz_table, 100, &q, err, sizeof(err)) ==
		    0) {
			fuzz_check_query(&q);
			ds_query_clear(&q);
		} else if (err[0] == '\0' || q.sql != NULL)
			abort();
		ds_spec_clear(&d);
	}
	free(s);
	registration(data, len);
	return 0;
}
