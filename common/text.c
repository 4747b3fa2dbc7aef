/*
 * text.c: UTF-8, as PostgreSQL takes it.  Text that reaches the database
 * from outside (a command's output, a query parameter, a path segment)
 * must be valid UTF-8 without NULs, or the statement fails.
 */
#include <stddef.h>

#include "cronvisor.h"

/*
 * The length of the valid UTF-8 sequence at p (left bytes remain), or 0:
 * no overlong forms, no surrogates, nothing past U+10FFFF, no NUL.
 */
size_t
utf8_len(const unsigned char *p, size_t left)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (p[0] >= 0x01 && p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (p[0] == 0xe0)
		lo = 0xa0; /* overlong */
	else if (p[0] == 0xed)
		hi = 0x9f; /* surrogates */
	else if (p[0] == 0xf0)
		lo = 0x90; /* overlong */
	else if (p[0] == 0xf4)
		hi = 0x8f; /* past U+10FFFF */
	if (left < n || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t k = 2; k < n; k++)
		if ((p[k] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* 1 if s[0..len) is valid UTF-8 without NULs (see utf8_len()), else 0. */
int
utf8_valid(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		if ((n = utf8_len(u + i, len - i)) == 0)
			return 0;
		i += n;
	}
	return 1;
}
