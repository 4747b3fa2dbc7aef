/*
 * fuzz_spec.c: libFuzzer target for the run spec the runner helper reads
 * (runner/spec.c).  Any bytes are given to spec_decode(); beyond "no
 * crash, no leak, no allocation sized by the input", every spec that
 * decodes must encode and decode back to the same spec; it aborts
 * otherwise.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "runner.h"
#include "spec_same.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run_spec s, t;
	enum log_level lv, lv2;
	unsigned char *buf;
	size_t len;
	char err[256];

	if (spec_decode(data, size, &s, &lv, err, sizeof(err)) == -1) {
		if (err[0] == '\0')
			abort(); /* a refusal always says why */
		return 0;
	}
	if (spec_encode(&s, lv, &buf, &len) == -1)
		abort();
	if (spec_decode(buf, len, &t, &lv2, err, sizeof(err)) == -1 ||
	    !spec_same(&s, &t) || lv != lv2)
		abort();
	free(buf);
	spec_free(&s);
	spec_free(&t);
	return 0;
}
