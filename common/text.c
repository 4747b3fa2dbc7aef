/*
 * text.c: UTF-8, as PostgreSQL takes it.  Text that reaches the database
 * from outside (a command's output, a query parameter, a path segment)
 * must be valid UTF-8 without NULs, or the statement fails.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

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

/*
 * Whether the bytes at u[0..left) start a control character that a
 * terminal or a log reader acts on: C0 (below 0x20) and DEL, or a C1
 * control U+0080..U+009F in its UTF-8 form (0xc2 0x80..0x9f; some
 * terminals take U+009B as CSI).  Returns its length in bytes, or 0.
 */
static size_t
text_control_len(const unsigned char *u, size_t left)
{
	if (u[0] < 0x20 || u[0] == 0x7f)
		return 1;
	if (u[0] == 0xc2 && left >= 2 && u[1] >= 0x80 && u[1] <= 0x9f)
		return 2;
	return 0;
}

/*
 * Copies s into out (outlen bytes, always NUL-terminated when outlen >
 * 0, cut at a whole escape) with every control character that is not in
 * keep (e.g. "\n\t"; NULL or "": none kept) written out: tab, newline and
 * carriage return as \t \n \r, every other byte of a control character
 * as \xHH (ESC as \x1b).  Everything else, invalid UTF-8 included, is
 * copied as it is: the point is that what reaches a terminal or a log
 * line cannot move the cursor, start an escape sequence or begin a new
 * line.  Returns the length of the whole escaped text, as snprintf does.
 */
size_t
text_escape(const char *s, const char *keep, char *out, size_t outlen)
{
	static const char named[] = "\t\n\r", letter[] = "tnr";
	const unsigned char *u = (const unsigned char *)s;
	size_t o = 0, w = 0, left = strlen(s), n, m;
	const char *nm;
	char esc[9];
	int full = 0;

	for (size_t i = 0; i < left; i += n) {
		n = text_control_len(u + i, left - i);
		if (n == 0 || (n == 1 && keep && strchr(keep, u[i]))) {
			n = 1;
			esc[0] = (char)u[i];
			esc[1] = '\0';
		} else if (n == 1 && (nm = strchr(named, u[i])) != NULL)
			snprintf(esc, sizeof(esc), "\\%c", letter[nm - named]);
		else if (n == 1)
			snprintf(esc, sizeof(esc), "\\x%02x", u[i]);
		else
			snprintf(
			    esc, sizeof(esc), "\\x%02x\\x%02x", u[i], u[i + 1]);
		m = strlen(esc);
		if (!full && w + m < outlen) {
			memcpy(out + w, esc, m);
			w += m;
		} else
			full = 1;
		o += m;
	}
	if (outlen > 0)
		out[w] = '\0';
	return o;
}

/* Characters (not bytes) of a valid UTF-8 string, as SQL length() counts. */
size_t
utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}
