/*
 * hostlist.c: the allow and deny lists of HTTP hosts (http_allow_hosts,
 * http_deny_hosts), parsed from their configuration text and matched
 * against a URL's host and against the address a request actually
 * connects to.  A list is comma-separated; each element is an exact host
 * name (`api.example.com`), a suffix pattern (`*.example.com`, which
 * matches every name below example.com but not example.com itself), an
 * IPv4 or IPv6 address (`169.254.169.254`, `::1`, `[::1]`) or a CIDR
 * block (`10.0.0.0/8`, `fe80::/10`).  Names compare case-insensitively
 * and without a trailing dot.  Every address is kept in its 128-bit IPv6
 * form, IPv4 as ::ffff:a.b.c.d, so that an IPv4-mapped IPv6 address can
 * never slip past an IPv4 entry.
 *
 * A URL's host is read the way libcurl and the C library will read it
 * (hostlist_host_addr()): an IPv4 address in any numeric spelling that
 * inet_aton() takes (`2852039166`, `0xa9fea9fe`, `0251.0376.0251.0376`,
 * `169.254.43518`), with or without one trailing dot, is that address,
 * and an IPv6 literal's zone is ignored.  An IPv6 address that embeds an
 * IPv4 one (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`,
 * NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) matches the entries of its IPv4
 * address as well as its own.
 *
 * The matching is pure: the runner (runner/http.c) calls it before a
 * request and again from libcurl's socket callbacks with the address it
 * is about to connect to, so that DNS cannot smuggle a denied address
 * behind an innocent name; the API calls it at create and update to
 * refuse a URL whose host is denied literally.  Deny wins over allow.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

#define HOSTLIST_ENTRIES_MAX 256 /* elements of one list */
#define HOSTLIST_NAME_MAX    253 /* longest DNS name, without the dot */
#define HOSTLIST_LABEL_MAX   63  /* longest DNS label */

enum hostlist_kind {
	HOSTLIST_NAME,   /* exact host name */
	HOSTLIST_SUFFIX, /* "*.example.com": names below example.com */
	HOSTLIST_NET,    /* an address and a prefix length */
};

struct hostlist_entry {
	enum hostlist_kind kind;          /* which of the fields below count */
	char name[HOSTLIST_NAME_MAX + 2]; /* NAME, SUFFIX: lower case */
	unsigned char addr[16];           /* NET: IPv6 form, masked to prefix */
	int prefix; /* NET: bits of addr that count, 0-128 */
};

/* The 96-bit prefix of an IPv4-mapped IPv6 address. */
static const unsigned char hostlist_v4mapped[12] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/*
 * Reads an address literal of len bytes (IPv4 dotted quad, IPv6, or IPv6
 * in brackets) into its 16-byte form; *is_v4 says whether it was written
 * as IPv4 (its prefix lengths are then counted from bit 96).  Returns
 * 0, or -1 if s is not an address.
 */
static int
hostlist_addr(const char *s, size_t len, unsigned char out[16], int *is_v4)
{
	char buf[INET6_ADDRSTRLEN + 2];
	struct in_addr a4;

	if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
		s++;
		len -= 2;
	}
	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET, buf, &a4) == 1) {
		memcpy(out, hostlist_v4mapped, 12);
		memcpy(out + 12, &a4, 4);
		*is_v4 = 1;
		return 0;
	}
	if (strchr(buf, '%') == NULL && inet_pton(AF_INET6, buf, out) == 1) {
		*is_v4 = 0; /* written as IPv6, even ::ffff:a.b.c.d */
		return 0;
	}
	return -1;
}

/* The value of hex digit c, or 16 if it is none. */
static int
hostlist_xdigit(unsigned char c)
{
	if (isdigit(c))
		return c - '0';
	if (isxdigit(c))
		return tolower(c) - 'a' + 10;
	return 16;
}

/*
 * Reads an IPv4 address in the numeric forms inet_aton() and libcurl
 * take: one to four parts separated by dots, each decimal, octal (a
 * leading 0) or hexadecimal (0x), the last part filling the bytes that
 * are left ("a" is 32 bits, "a.b" 8.24, "a.b.c" 8.8.16), and one
 * trailing dot allowed.  Writes the address in network order; returns
 * 0, or -1 if s (len bytes) is not such an address.
 */
static int
hostlist_v4_numeric(const char *s, size_t len, unsigned char out[4])
{
	unsigned long part[4], v = 0;
	size_t i = 0;
	int n = 0;

	if (len > 0 && s[len - 1] == '.')
		len--;
	for (;;) {
		unsigned long x = 0;
		int base = 10, d;
		size_t digits = 0;

		if (i >= len || !isdigit((unsigned char)s[i]) || n == 4)
			return -1;
		if (s[i] == '0' && i + 1 < len && (s[i + 1] | 0x20) == 'x') {
			base = 16;
			i += 2;
		} else if (s[i] == '0')
			base = 8;
		for (; i < len && s[i] != '.'; i++, digits++) {
			if ((d = hostlist_xdigit((unsigned char)s[i])) >= base)
				return -1;
			if ((x = x * (unsigned long)base + (unsigned long)d) >
			    0xffffffffUL)
				return -1;
		}
		if (digits == 0)
			return -1;
		part[n++] = x;
		if (i++ == len)
			break;
	}
	if (part[n - 1] > (0xffffffffUL >> (8 * (n - 1))))
		return -1;
	for (int k = 0; k < n - 1; k++) {
		if (part[k] > 0xff)
			return -1;
		v |= part[k] << (24 - 8 * k);
	}
	v |= part[n - 1];
	for (int k = 0; k < 4; k++)
		out[k] = (unsigned char)(v >> (24 - 8 * k));
	return 0;
}

/*
 * Reads a URL's host, or an address connected to, of len bytes, as the
 * address libcurl will connect to: an IPv6 literal (brackets optional,
 * a zone after '%' ignored) or an IPv4 address in any numeric form of
 * hostlist_v4_numeric().  Returns 0 with its 16-byte form, or -1 if s
 * is no address (a name, or nothing valid).
 */
static int
hostlist_host_addr(const char *s, size_t len, unsigned char out[16])
{
	const char *pct;
	int is_v4;

	if (hostlist_v4_numeric(s, len, out + 12) == 0) {
		memcpy(out, hostlist_v4mapped, 12);
		return 0;
	}
	if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
		s++;
		len -= 2;
	}
	if ((pct = memchr(s, '%', len)) != NULL)
		len = (size_t)(pct - s);
	if (memchr(s, ':', len) == NULL)
		return -1; /* an IPv4 form refused above */
	return hostlist_addr(s, len, out, &is_v4);
}

/*
 * The IPv4 address that IPv6 address a embeds, IPv4-mapped, in out:
 * that of an IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96, but
 * not ::, ::1 and the rest of ::/104), NAT64 (64:ff9b::/96) or 6to4
 * (2002::/16) address, each of which can carry a request to that IPv4
 * address.  Returns 1, or 0 if a embeds none.
 */
static int
hostlist_embedded_v4(const unsigned char a[16], unsigned char out[16])
{
	static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b};
	static const unsigned char zero[12];
	const unsigned char *v4;

	if (memcmp(a, hostlist_v4mapped, 12) == 0 ||
	    memcmp(a, nat64, 12) == 0 ||
	    (memcmp(a, zero, 12) == 0 && a[12] != 0))
		v4 = a + 12;
	else if (a[0] == 0x20 && a[1] == 0x02)
		v4 = a + 2;
	else
		return 0;
	memcpy(out, hostlist_v4mapped, 12);
	memcpy(out + 12, v4, 4);
	return 1;
}

/* Whether the first prefix bits of a and b are equal. */
static int
hostlist_prefix_eq(const unsigned char *a, const unsigned char *b, int prefix)
{
	int whole = prefix / 8, rest = prefix % 8;
	unsigned char mask = (unsigned char)(0xff << (8 - rest));

	if (memcmp(a, b, (size_t)whole) != 0)
		return 0;
	return rest == 0 || ((a[whole] ^ b[whole]) & mask) == 0;
}

/* Clears the bits of addr past prefix. */
static void
hostlist_mask(unsigned char addr[16], int prefix)
{
	for (int i = 0; i < 16; i++) {
		int keep = prefix - i * 8;

		if (keep <= 0)
			addr[i] = 0;
		else if (keep < 8)
			addr[i] &= (unsigned char)(0xff << (8 - keep));
	}
}

/*
 * Copies host name s (len bytes) into out in lower case without one
 * trailing dot, if it is a DNS name: labels of letters, digits, '-' and
 * '_', none empty or longer than 63 bytes.  Returns 0, or -1.
 */
static int
hostlist_name(const char *s, size_t len, char *out)
{
	size_t label = 0;

	if (len > 0 && s[len - 1] == '.')
		len--;
	if (len == 0 || len > HOSTLIST_NAME_MAX)
		return -1;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '.') {
			if (label == 0)
				return -1;
			label = 0;
		} else if (isalnum(c) || c == '-' || c == '_') {
			if (++label > HOSTLIST_LABEL_MAX)
				return -1;
		} else
			return -1;
		out[i] = (char)tolower(c);
	}
	if (label == 0)
		return -1;
	out[len] = '\0';
	return 0;
}

/* Parses a CIDR "ADDR/BITS" or an address; 0, or -1 with why. */
static int
hostlist_parse_net(struct hostlist_entry *e, const char *s, size_t len,
    char *why, size_t whylen)
{
	const char *slash = memchr(s, '/', len);
	size_t alen = slash ? (size_t)(slash - s) : len;
	int is_v4, bits = 0, max;

	if (hostlist_addr(s, alen, e->addr, &is_v4) == -1) {
		snprintf(why, whylen, "not an IP address before '/'");
		return -1;
	}
	max = is_v4 ? 32 : 128;
	if (slash == NULL)
		bits = max;
	else {
		const char *d = slash + 1;
		size_t n = len - alen - 1;

		if (n == 0 || n > 3 || strspn(d, "0123456789") < n) {
			snprintf(why, whylen, "prefix length is not a number");
			return -1;
		}
		for (size_t i = 0; i < n; i++)
			bits = bits * 10 + (d[i] - '0');
		if (bits > max) {
			snprintf(why, whylen, "prefix length over %d", max);
			return -1;
		}
	}
	e->kind = HOSTLIST_NET;
	e->prefix = is_v4 ? bits + 96 : bits;
	hostlist_mask(e->addr, e->prefix);
	return 0;
}

/* Parses one element (len bytes, blanks trimmed); 0, or -1 with why. */
static int
hostlist_parse_entry(struct hostlist_entry *e, const char *s, size_t len,
    char *why, size_t whylen)
{
	int is_v4;
	unsigned char tmp[16];

	memset(e, 0, sizeof(*e));
	if (memchr(s, '/', len) != NULL ||
	    hostlist_addr(s, len, tmp, &is_v4) == 0)
		return hostlist_parse_net(e, s, len, why, whylen);
	if (len > 2 && s[0] == '*' && s[1] == '.') {
		e->kind = HOSTLIST_SUFFIX;
		e->name[0] = '.';
		if (hostlist_name(s + 2, len - 2, e->name + 1) == 0)
			return 0;
	} else {
		e->kind = HOSTLIST_NAME;
		if (hostlist_name(s, len, e->name) == 0)
			return 0;
	}
	snprintf(
	    why, whylen, "not a host name, *.suffix, IP address or CIDR block");
	return -1;
}

/*
 * Parses text, a comma-separated list (blanks around elements ignored;
 * "" or only blanks: an empty list), into hl, which the caller releases
 * with hostlist_clear() in every case.  Returns 0, or -1 with err naming
 * the element and the problem (hl is then empty).
 */
int
hostlist_parse(struct hostlist *hl, const char *text, char *err, size_t errlen)
{
	const char *p = text;
	char why[CV_ERRLEN];

	memset(hl, 0, sizeof(*hl));
	if (text[strspn(text, " \t")] == '\0')
		return 0;
	for (;;) {
		size_t n = strcspn(p, ","), b = strspn(p, " \t");
		size_t len = n > b ? n - b : 0;
		const char *s = p + b;
		struct hostlist_entry *e;

		while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
			len--;
		if (len == 0) {
			snprintf(
			    err, errlen, "element %zu is empty", hl->n + 1);
			goto fail;
		}
		if (hl->n == HOSTLIST_ENTRIES_MAX) {
			snprintf(err, errlen, "more than %d elements",
			    HOSTLIST_ENTRIES_MAX);
			goto fail;
		}
		if ((e = realloc(hl->e, (hl->n + 1) * sizeof(*e))) == NULL) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		hl->e = e;
		if (hostlist_parse_entry(&e[hl->n], s, len, why, sizeof(why)) ==
		    -1) {
			snprintf(err, errlen, "\"%.*s\": %s",
			    len > 64 ? 64 : (int)len, s, why);
			goto fail;
		}
		hl->n++;
		if (p[n] == '\0')
			return 0;
		p += n + 1;
	}
fail:
	hostlist_clear(hl);
	return -1;
}

/* Frees what hl holds and empties it; safe on an empty or zeroed list. */
void
hostlist_clear(struct hostlist *hl)
{
	free(hl->e);
	memset(hl, 0, sizeof(*hl));
}

/*
 * Whether address a (16-byte form), or the IPv4 address it embeds, is in
 * one of hl's blocks.
 */
static int
hostlist_has_addr(const struct hostlist *hl, const unsigned char a[16])
{
	unsigned char v4[16];
	int embeds = hostlist_embedded_v4(a, v4);

	for (size_t i = 0; i < hl->n; i++)
		if (hl->e[i].kind == HOSTLIST_NET &&
		    (hostlist_prefix_eq(hl->e[i].addr, a, hl->e[i].prefix) ||
		        (embeds &&
		            hostlist_prefix_eq(
		                hl->e[i].addr, v4, hl->e[i].prefix))))
			return 1;
	return 0;
}

/* Whether host name n (normalized) matches a name or suffix of hl. */
static int
hostlist_has_name(const struct hostlist *hl, const char *n)
{
	size_t len = strlen(n);

	for (size_t i = 0; i < hl->n; i++) {
		const struct hostlist_entry *e = &hl->e[i];
		size_t el = strlen(e->name);

		if (e->kind == HOSTLIST_NAME && strcmp(e->name, n) == 0)
			return 1;
		if (e->kind == HOSTLIST_SUFFIX && len > el &&
		    strcmp(n + len - el, e->name) == 0)
			return 1;
	}
	return 0;
}

/* Whether hl has any address or CIDR element. */
static int
hostlist_has_nets(const struct hostlist *hl)
{
	for (size_t i = 0; i < hl->n; i++)
		if (hl->e[i].kind == HOSTLIST_NET)
			return 1;
	return 0;
}

/*
 * Whether host (a URL's host: a name, or an address literal, IPv6 with or
 * without brackets) or ip (the address connected to, as text; NULL if not
 * known yet) is on hl.  A host that is neither a valid name nor an
 * address matches nothing here; the caller decides what that means.
 */
int
hostlist_match(const struct hostlist *hl, const char *host, const char *ip)
{
	char name[HOSTLIST_NAME_MAX + 2];
	unsigned char a[16];

	if (host != NULL) {
		if (hostlist_host_addr(host, strlen(host), a) == 0) {
			if (hostlist_has_addr(hl, a))
				return 1;
		} else if (hostlist_name(host, strlen(host), name) == 0 &&
		    hostlist_has_name(hl, name))
			return 1;
	}
	return ip != NULL && hostlist_host_addr(ip, strlen(ip), a) == 0 &&
	    hostlist_has_addr(hl, a);
}

/*
 * The verdict on a request to host, connected (or about to connect) to
 * ip; ip NULL before the name is resolved.  Deny wins: a host or an
 * address on deny is HOSTLIST_DENIED.  Then an empty allow list allows
 * everything; otherwise the host or the address must be on it.  Before
 * resolution (ip NULL) a name that is not on allow is still HOSTLIST_OK
 * when allow has address blocks, as its address may be in one of them:
 * the check with the address decides.  A host that is an address in
 * any spelling ("0x7f.1") is never allowed by a name, only by its
 * address.
 */
enum hostlist_verdict
hostlist_check(const struct hostlist *allow, const struct hostlist *deny,
    const char *host, const char *ip)
{
	unsigned char a[16];

	if (hostlist_match(deny, host, ip))
		return HOSTLIST_DENIED;
	if (allow->n == 0 || hostlist_match(allow, host, ip))
		return HOSTLIST_OK;
	if (ip == NULL && host != NULL && hostlist_has_nets(allow) &&
	    hostlist_host_addr(host, strlen(host), a) == -1)
		return HOSTLIST_OK;
	return HOSTLIST_NOT_ALLOWED;
}

/*
 * Copies the host of an http:// or https:// URL into host (len bytes):
 * after the scheme and any userinfo, up to the port, path, query or
 * fragment, with brackets of an IPv6 literal kept and %XX escapes
 * decoded.  Returns 0, or -1 if url is not such a URL or the host is
 * empty or does not fit.
 */
int
hostlist_url_host(const char *url, char *host, size_t len)
{
	const char *h, *end, *at;
	size_t o = 0;

	if (strncasecmp(url, "http://", 7) == 0)
		h = url + 7;
	else if (strncasecmp(url, "https://", 8) == 0)
		h = url + 8;
	else
		return -1;
	end = h + strcspn(h, "/?#");
	for (at = h; at < end; at++)
		if (*at == '@')
			h = at + 1;
	if (*h == '[')
		end = memchr(h, ']', (size_t)(end - h)) ? strchr(h, ']') + 1
		                                        : end;
	else
		end = h + strcspn(h, ":/?#");
	for (const char *p = h; p < end; p++) {
		unsigned int c = (unsigned char)*p;

		if (c == '%' && end - p >= 3 && isxdigit((unsigned char)p[1]) &&
		    isxdigit((unsigned char)p[2])) {
			sscanf(p + 1, "%2x", &c);
			p += 2;
		}
		if (o + 1 >= len || c == 0)
			return -1;
		host[o++] = (char)c;
	}
	host[o] = '\0';
	return o == 0 ? -1 : 0;
}

/*
 * Writes the canonical form of host (a URL's host as hostlist_url_host()
 * gives it) into out (len bytes): an address in any spelling as libcurl
 * will connect to it, IPv4 and IPv4-mapped IPv6 as "a.b.c.d", other IPv6
 * as "[inet_ntop form]" without a zone; a name in lower case without its
 * trailing dot.  Two hosts whose canonical forms are equal reach the same
 * place; compare them to tell whether a URL points at a given host
 * whatever its spelling.  Returns 0, or -1 if host is neither an address
 * nor a valid name, or out is too small.
 */
int
hostlist_canon(const char *host, char *out, size_t len)
{
	char name[HOSTLIST_NAME_MAX + 2], text[INET6_ADDRSTRLEN];
	unsigned char a[16];
	int n;

	if (hostlist_host_addr(host, strlen(host), a) == 0) {
		if (memcmp(a, hostlist_v4mapped, 12) == 0)
			n = snprintf(out, len, "%u.%u.%u.%u", a[12], a[13],
			    a[14], a[15]);
		else if (inet_ntop(AF_INET6, a, text, sizeof(text)) != NULL)
			n = snprintf(out, len, "[%s]", text);
		else
			return -1;
	} else if (hostlist_name(host, strlen(host), name) == 0)
		n = snprintf(out, len, "%s", name);
	else
		return -1;
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/*
 * The canonical host (hostlist_canon()) of an http:// or https:// URL in
 * out (len bytes).  Returns 0, or -1 if url has no host that is an
 * address or a valid name, or out is too small.
 */
int
hostlist_url_canon(const char *url, char *out, size_t len)
{
	char host[HOSTLIST_NAME_MAX + 64];

	if (hostlist_url_host(url, host, sizeof(host)) == -1)
		return -1;
	return hostlist_canon(host, out, len);
}

/* A message for a refused host: "host "x" is denied by http_deny_hosts". */
const char *
hostlist_verdict_text(enum hostlist_verdict v)
{
	switch (v) {
	case HOSTLIST_OK:
		return "is allowed";
	case HOSTLIST_DENIED:
		return "is denied by http_deny_hosts";
	case HOSTLIST_NOT_ALLOWED:
		return "is not in http_allow_hosts";
	}
	return "?";
}
