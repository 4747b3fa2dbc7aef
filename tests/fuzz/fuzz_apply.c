/*
 * fuzz_apply.c: libFuzzer target for the body of POST /apply
 * (common/apply.c, apply_parse()).  A refusal must say what and why; a
 * body that parses has a valid set name, at most APPLY_ITEMS_MAX
 * documents of each kind, each with its key and a 64-digit hash, and no
 * key twice in one kind.  Everything is freed: ASan's leak check runs at
 * exit.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct schedule_error e;
	struct apply_req r;

	memset(&e, 0, sizeof(e));
	if (apply_parse((const char *)data, size, &r, &e) == -1) {
		if (e.code[0] == '\0' || e.message[0] == '\0')
			abort();
		apply_clear(&r);
		return 0;
	}
	if (r.set == NULL || !apply_set_ok(r.set))
		abort();
	for (int k = 0; k < APPLY_KINDS; k++) {
		if (r.n[k] > APPLY_ITEMS_MAX)
			abort();
		for (size_t i = 0; i < r.n[k]; i++) {
			if (r.items[k][i].key == NULL ||
			    strlen(r.items[k][i].hash) != APPLY_HASH_LEN)
				abort();
			for (size_t j = 0; j < i; j++)
				if (strcmp(r.items[k][i].key,
				        r.items[k][j].key) == 0)
					abort();
		}
	}
	apply_clear(&r);
	return 0;
}
