/*
 * listsql.c: prints the statement GET /schedules runs for a request, as
 * psql input, for tests/api_list.sh to ask PostgreSQL for its plans.
 *
 *   listsql ROLE OWNER REQUEST_URI
 *
 * ROLE is viewer, editor or admin, OWNER the token's owner.  Prints
 * "PREPARE p AS <statement>;" and then "EXPLAIN (COSTS OFF) EXECUTE
 * p(<parameters>);", each parameter a quoted literal or NULL.  Exits 1
 * when the API would refuse the request (its answer on stderr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api.h"

/* Prints v as an SQL literal: NULL, or quoted with '' for '. */
static void
put_literal(const char *v)
{
	if (v == NULL) {
		fputs("NULL", stdout);
		return;
	}
	putchar('\'');
	for (; *v; v++) {
		if (*v == '\'')
			putchar('\'');
		putchar(*v);
	}
	putchar('\'');
}

int
main(int argc, char **argv)
{
	struct list_query *q = malloc(sizeof(*q));
	struct request rq;
	struct response rs;
	char *buf = NULL;
	int r;

	if (argc != 4 || q == NULL) {
		fprintf(stderr, "usage: listsql ROLE OWNER REQUEST_URI\n");
		return 2;
	}
	memset(&rq, 0, sizeof(rq));
	memset(&rs, 0, sizeof(rs));
	if (auth_role_parse(argv[1], &rq.who.role) == -1 ||
	    strlen(argv[2]) >= sizeof(rq.who.owner)) {
		fprintf(stderr, "listsql: a role and an owner, please\n");
		return 2;
	}
	strcpy(rq.who.owner, argv[2]);
	if (http_target(argv[3], &buf, &rq, &rs) != 0 ||
	    (r = schedules_list_query(&rq, &rs, q)) != 0) {
		char *text = rs.body != NULL ? json_dumps(rs.body, 0) : NULL;

		fprintf(stderr, "listsql: refused: %d %s\n", rs.status,
		    text != NULL ? text : "");
		free(text);
		return 1;
	}
	printf("PREPARE p AS %s;\nEXPLAIN (COSTS OFF) EXECUTE p(", q->sql);
	for (int i = 0; i < q->np; i++) {
		if (i > 0)
			fputs(", ", stdout);
		put_literal(q->p[i]);
	}
	puts(");");
	http_response_clear(&rs);
	free(buf);
	free(q);
	return 0;
}
