/*
 * fuzz_dsfilter.c: libFuzzer target for the JSON filter of data-source
 * strings (common/datasource.c): the input is read as JSON and, when it
 * is an object, compiled as the filter of "db:ticker:all:id" against a
 * registered table; what compiles must keep every value out of the SQL
 * text (ds_table.h), and a refusal must say why.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ds_table.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
	struct ds_spec d;
	struct ds_query q;
	char err[256];
	json_t *f;

	if (ds_parse("db:ticker:all:id", &d, err, sizeof(err)) == -1)
		abort();
	f = json_loadb((const char *)data, len, JSON_REJECT_DUPLICATES, NULL);
	if (f != NULL && json_array_append_new(d.filter, f) == 0) {
		err[0] = '\0';
		if (ds_compile(&d, &fuzz_table, 100, &q, err, sizeof(err)) ==
		    0) {
			fuzz_check_query(&q);
			ds_query_clear(&q);
		} else if (err[0] == '\0')
			abort();
	}
	ds_spec_clear(&d);
	return 0;
}
