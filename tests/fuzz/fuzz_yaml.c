/*
 * fuzz_yaml.c: libFuzzer target for the YAML reader of cronvisorctl apply
 * (cli/yaml.c, yaml_to_json()): whatever the bytes, either an array of
 * documents that jansson can write out (so every string is UTF-8 and the
 * aliases expanded stay within the node limit) or an error that says
 * where; never a crash, a leak or a read out of bounds.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "yaml_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	json_t *docs;
	char *text;

	docs = yaml_to_json((const char *)data, size, err, sizeof(err));
	if (docs == NULL) {
		if (err[0] == '\0')
			abort();
		return 0;
	}
	if (!json_is_array(docs) || err[0] != '\0')
		abort();
	/* Small inputs only: an alias-expanded document may be large. */
	if (size < 256) {
		if ((text = json_dumps(docs, JSON_COMPACT | JSON_ENCODE_ANY)) ==
		    NULL)
			abort();
		free(text);
	}
	json_decref(docs);
	return 0;
}
