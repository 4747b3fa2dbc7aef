/*
 * fuzz_config.c: libFuzzer target for config_parse() and config_print().
 * Arbitrary bytes are parsed on top of the defaults.  When they parse, the
 * printed configuration must parse again and print the same text: that is
 * config_print's promise (passwords masked, and masking what is already
 * masked changes nothing), and it exercises the database_url masker on
 * whatever the fuzzer puts there.  A failed parse must leave the defaults
 * untouched.  Leaks are caught by LeakSanitizer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Returns what config_print() writes for cf; the caller frees it. */
static char *
print_config(const struct config *cf, size_t *len)
{
	char *out = NULL;
	FILE *m = open_memstream(&out, len);

	if (m == NULL)
		abort();
	config_print(cf, m);
	if (fclose(m) != 0)
		abort();
	return out;
}

/* Parses the printed text again; it must give back the same print. */
static void
check_roundtrip(const struct config *cf)
{
	struct config back;
	char err[CV_ERRLEN], *out, *again;
	size_t len, len2;

	out = print_config(cf, &len);
	config_defaults(&back);
	if (config_parse(&back, out, len, "printed", err, sizeof(err)) == -1) {
		fprintf(
		    stderr, "printed config does not parse: %s\n%s", err, out);
		abort();
	}
	again = print_config(&back, &len2);
	if (len != len2 || memcmp(out, again, len) != 0) {
		fprintf(stderr, "round trip differs:\n%s---\n%s", out, again);
		abort();
	}
	free(again);
	free(out);
	config_clear(&back);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *defaults;
	static size_t deflen;
	struct config cf;
	char err[CV_ERRLEN], *out;
	size_t len;

	config_defaults(&cf);
	if (defaults == NULL)
		defaults = print_config(&cf, &deflen);
	if (config_parse(
	        &cf, (const char *)data, size, "fuzz", err, sizeof(err)) == 0) {
		check_roundtrip(&cf);
	} else {
		/* Bad input changes nothing. */
		out = print_config(&cf, &len);
		if (len != deflen || memcmp(out, defaults, len) != 0)
			abort();
		free(out);
	}
	config_clear(&cf);
	return 0;
}
