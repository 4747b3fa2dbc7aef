/*
 * batch.c: statements over a batch of rows.  A burst claims and finishes
 * hundreds of runs per loop turn; a statement per run made PostgreSQL's
 * per-statement work, and the loop's wait for each answer, the limit.
 * Such a statement takes its rows as one JSON array parameter
 * (json_to_recordset() on the server), which jansson writes for any text.
 */
#include <stdlib.h>

#include "cronvisord.h"

/* A number, or JSON null when null is set (CV_NEVER, no delay). */
json_t *
batch_int(int64_t v, int null)
{
	return null ? json_null() : json_integer((json_int_t)v);
}

/*
 * Runs sql with first as $1 (none when NULL) and the array rows, as JSON,
 * as the next parameter; rows is released.  Returns the statement's rows,
 * or NULL with err set.
 */
struct db_rows *
batch_query(struct db *db, const char *sql, const char *first, json_t *rows,
    char *err, size_t errlen)
{
	char *text = json_dumps(rows, JSON_COMPACT);
	const char *p[2] = {first, text};
	struct db_rows *res;

	json_decref(rows);
	if (text == NULL) {
		log_errbuf(err, errlen, "out of memory");
		return NULL;
	}
	res = first != NULL ? db_query(db, sql, 2, p, err, errlen)
	                    : db_query(db, sql, 1, p + 1, err, errlen);
	free(text);
	return res;
}
