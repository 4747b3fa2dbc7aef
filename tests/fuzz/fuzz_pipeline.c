/*
 * fuzz_pipeline.c: libFuzzer target for the pipeline document of
 * common/pipeline.c.  The input is split at its first NUL into a pipeline
 * body and a PATCH body (no NUL: an empty patch).  A refusal must say what
 * and where; whatever parses must be its own normal form (its native
 * document parses again to the same document), have no dependency that
 * names a missing step, and take the patch or refuse it with an error.
 * Everything is freed: ASan's leak check runs at exit.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len);

/* Aborts unless a refusal says what and why. */
static void
refused(const struct schedule_error *e)
{
	if (e->code[0] == '\0' || e->message[0] == '\0')
		abort();
}

/* Every dependency of d names a step of d other than its own. */
static void
check_graph(const json_t *d)
{
	json_t *steps = json_object_get(d, "steps");

	for (size_t i = 0; i < json_array_size(steps); i++) {
		json_t *s = json_array_get(steps, i);
		json_t *deps = json_object_get(s, "depends_on");

		for (size_t k = 0; k < json_array_size(deps); k++) {
			const char *dep =
			    json_string_value(json_array_get(deps, k));
			int found = 0;

			if (dep == NULL ||
			    strcmp(dep,
			        json_string_value(
			            json_object_get(s, "step_id"))) == 0)
				abort();
			for (size_t j = 0; j < json_array_size(steps); j++)
				found |= strcmp(dep,
				             json_string_value(json_object_get(
				                 json_array_get(steps, j),
				                 "step_id"))) == 0;
			if (!found)
				abort();
		}
	}
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
	const char *body = (const char *)data;
	const unsigned char *nul = memchr(data, '\0', len);
	size_t blen = nul ? (size_t)(nul - data) : len;
	struct schedule_error e;
	json_t *d, *again, *patched;
	char *text;

	memset(&e, 0, sizeof(e));
	if ((d = pipeline_parse(body, blen, NULL, &e)) == NULL) {
		refused(&e);
		return 0;
	}
	check_graph(d);
	if ((text = json_dumps(d, JSON_COMPACT)) == NULL)
		abort();
	memset(&e, 0, sizeof(e));
	if ((again = pipeline_parse(text, strlen(text), NULL, &e)) == NULL ||
	    !json_equal(again, d))
		abort();
	json_decref(again);
	free(text);
	if (nul != NULL) {
		memset(&e, 0, sizeof(e));
		patched = pipeline_parse(
		    (const char *)nul + 1, len - blen - 1, d, &e);
		if (patched == NULL)
			refused(&e);
		else
			check_graph(patched);
		json_decref(patched);
	}
	json_decref(d);
	return 0;
}
