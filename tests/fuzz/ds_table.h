/*
 * ds_table.h: the registered table the data-source fuzz targets compile
 * against (fuzz_datasource.c, fuzz_dsfilter.c), and what every query they
 * compile must be: no quote, semicolon or comment of the input's in the
 * text (values are parameters, names come from here), and as many
 * parameters as the text has placeholders.
 */
#ifndef DS_TABLE_H
#define DS_TABLE_H

#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

static const struct ds_column fuzz_cols[] = {
    {"id", "\"id\"", "text"},
    {"enabled", "\"enabled\"", "boolean"},
    {"n", "\"n\"", "integer"},
    {"at", "\"created_at\"", "timestamptz"},
};
static const struct ds_table fuzz_table = {"ticker", "\"public\".\"ticker\"",
    "id", fuzz_cols, sizeof(fuzz_cols) / sizeof(*fuzz_cols)};

static void
fuzz_check_query(const struct ds_query *q)
{
	int dollars = 0;

	if (q->sql == NULL || strchr(q->sql, '\'') || strchr(q->sql, ';') ||
	    strstr(q->sql, "--") || strstr(q->sql, "/*"))
		abort();
	for (const char *p = q->sql; (p = strchr(p, '$')) != NULL; p++)
		dollars++;
	if (dollars != q->nparams)
		abort();
}

#endif
