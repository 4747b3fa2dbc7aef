/*
 * tail.c: the last bytes of a stream of any length.  A run may write a
 * gigabyte; the result carries at most RESULT_OUTPUT_MAX bytes of it, and
 * the end of a log is what says what went wrong.  So the output is drained
 * as fast as it comes into a ring of fixed size, allocated once, and
 * straightened into the result at the end: the runner's memory does not
 * grow with the output.
 */
#include <stdlib.h>
#include <string.h>

#include "runner.h"

/*
 * Makes t keep the last cap bytes (0 keeps nothing).  Returns 0, or -1
 * with errno ENOMEM.
 */
int
tail_init(struct tail *t, size_t cap)
{
	memset(t, 0, sizeof(*t));
	if (cap == 0)
		return 0;
	if ((t->buf = malloc(cap)) == NULL)
		return -1;
	t->cap = cap;
	return 0;
}

/* Appends len bytes, forgetting the oldest ones beyond the capacity. */
void
tail_add(struct tail *t, const void *data, size_t len)
{
	const char *p = data;
	size_t n;

	t->len += len;
	if (t->cap == 0)
		return;
	if (len > t->cap) {
		/* Only the last cap bytes of this chunk can survive. */
		p += len - t->cap;
		len = t->cap;
	}
	while (len > 0) {
		n = t->cap - t->head;
		if (n > len)
			n = len;
		memcpy(t->buf + t->head, p, n);
		t->head = (t->head + n) % t->cap;
		p += n;
		len -= n;
	}
}

/*
 * Moves the kept bytes, oldest first, into res->output (freeing what was
 * there) and empties t.  Returns 0, or -1 with errno ENOMEM (res->output
 * is then NULL, and t unchanged).
 */
int
tail_take(struct tail *t, struct result *res)
{
	size_t n = t->len < t->cap ? (size_t)t->len : t->cap;
	size_t start = t->len < t->cap ? 0 : t->head;
	char *out;

	free(res->output);
	res->output = NULL;
	res->output_len = 0;
	if (n == 0)
		return 0;
	if ((out = malloc(n)) == NULL)
		return -1;
	memcpy(out, t->buf + start, n - start);
	memcpy(out + (n - start), t->buf, start);
	res->output = out;
	res->output_len = n;
	t->len = 0;
	t->head = 0;
	return 0;
}

/* Frees what t holds. */
void
tail_clear(struct tail *t)
{
	free(t->buf);
	memset(t, 0, sizeof(*t));
}
