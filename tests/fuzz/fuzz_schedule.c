/*
 * fuzz_schedule.c: libFuzzer target for the schedule document parser of
 * common/schedule.c.  Whatever parses must write back with
 * schedule_to_json(), parse again to an equal document, give its INSERT
 * parameters, and have a first slot computed without trouble.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len);

/* Writes d back, parses that again and aborts unless it is equal. */
static void
round_trip(const struct schedule_doc *d)
{
	struct schedule_doc d2;
	struct schedule_error e;
	json_t *j = schedule_to_json(d);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	if (s == NULL || schedule_parse(s, strlen(s), &d2, &e) == -1 ||
	    !schedule_equal(d, &d2))
		abort();
	schedule_clear(&d2);
	free(s);
	json_decref(j);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
	struct schedule_doc d;
	struct schedule_error e;
	struct schedule_params p;
	struct slot sl;

	if (schedule_parse((const char *)data, len, &d, &e) == -1) {
		if (e.code[0] == '\0' || e.message[0] == '\0')
			abort();
		return 0;
	}
	round_trip(&d);
	if (schedule_params(&d, &p) == -1 || p.values[0] == NULL)
		abort();
	schedule_params_clear(&p);
	if (schedule_first_slot(&d, 1773061200, &sl) == -1)
		abort();
	/* The document patched with itself stays the same. */
	if (schedule_patch(&d, (const char *)data, len, &e) == -1)
		abort();
	round_trip(&d);
	schedule_clear(&d);
	return 0;
}
