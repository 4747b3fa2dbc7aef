/*
 * spec_same.h: whether two run specs (runner/spec.c) say the same, for
 * tests/check_spec.c and tests/fuzz/fuzz_spec.c.
 */
#ifndef SPEC_SAME_H
#define SPEC_SAME_H

#include <string.h>

#include "runner.h"

static inline int
same_str(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

static inline int
same_strv(char *const *a, char *const *b)
{
	size_t i;

	for (i = 0; a[i] != NULL && b[i] != NULL; i++)
		if (strcmp(a[i], b[i]) != 0)
			return 0;
	return a[i] == b[i];
}

static inline int
spec_same(const struct run_spec *a, const struct run_spec *b)
{
	return a->target == b->target && same_str(a->run_id, b->run_id) &&
	    same_str(a->schedule, b->schedule) && same_strv(a->argv, b->argv) &&
	    same_strv(a->env, b->env) && same_str(a->cwd, b->cwd) &&
	    a->run_as == b->run_as && a->uid == b->uid && a->gid == b->gid &&
	    a->timeout == b->timeout && a->kill_grace == b->kill_grace &&
	    a->output_tail == b->output_tail &&
	    a->not_before_us == b->not_before_us &&
	    memcmp(&a->limits, &b->limits, sizeof(a->limits)) == 0;
}

#endif
