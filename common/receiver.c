/*
 * receiver.c: what keeps the receiver's events (docs/schedules.md, "No
 * target: the receiver") apart from what a tenant can send.  A tenant's
 * http target may not reach the receiver's URL: receiver_url_reaches()
 * compares two URLs as a server would read them (scheme's default port,
 * host spellings of one address, dot segments and percent escapes in the
 * path), for the API's check at the door and the runner's on every
 * request.  The events the supervisor sends are signed with the
 * operator's receiver_secret: receiver_sign() is the HMAC-SHA256 of
 * "<unix time>.<body>" (OpenSSL's libcrypto), sent as
 * `X-Cronvisor-Signature: t=<unix time>,v1=<hex>`, so that a receiver can
 * tell them from forgeries and refuse replays.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "cronvisor.h"

/* Appends c to out (len bytes, *o used), lower-cased if lower; -1: full. */
static int
put(char *out, size_t len, size_t *o, int c, int lower)
{
	if (*o + 1 >= len)
		return -1;
	out[(*o)++] = (char)(lower ? tolower(c) : c);
	out[*o] = '\0';
	return 0;
}

/*
 * The host h[0..n) in one spelling per address: lower case, percent
 * escapes decoded, no trailing dot, an IPv4 address in any form the C
 * library (and so libcurl) reads (0x7f000001, 2130706433, 127.1, octal)
 * as a dotted quad, an IPv6 literal (brackets dropped) as inet_ntop()
 * writes it, and an IPv4-mapped one as its IPv4 address.
 */
static int
canon_host(const char *h, size_t n, char *out, size_t len)
{
	char buf[256], a6[16];
	struct in_addr a4;
	size_t o = 0;
	unsigned int c;

	if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
		h++;
		n -= 2;
	}
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		c = (unsigned char)h[i];
		if (c == '%' && i + 2 < n &&
		    isxdigit((unsigned char)h[i + 1]) &&
		    isxdigit((unsigned char)h[i + 2])) {
			sscanf(h + i + 1, "%2x", &c);
			i += 2;
		}
		if (c == 0 || put(buf, sizeof(buf), &o, (int)c, 1) == -1)
			return -1;
	}
	while (o > 0 && buf[o - 1] == '.')
		buf[--o] = '\0';
	if (o == 0)
		return -1;
	if (inet_aton(buf, &a4) == 1)
		return inet_ntop(AF_INET, &a4, out, (socklen_t)len) ? 0 : -1;
	if (inet_pton(AF_INET6, buf, a6) == 1) {
		if (memcmp(a6, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0)
			return inet_ntop(AF_INET, a6 + 12, out, (socklen_t)len)
			    ? 0
			    : -1;
		return inet_ntop(AF_INET6, a6, out, (socklen_t)len) ? 0 : -1;
	}
	if (o >= len)
		return -1;
	memcpy(out, buf, o + 1);
	return 0;
}

/*
 * The path p[0..n) as a server reads it: percent escapes decoded, dot
 * segments removed (RFC 3986, 5.2.4), "/" when empty.
 */
static int
canon_path(const char *p, size_t n, char *out, size_t len)
{
	size_t o = 0, seg;
	unsigned int c;

	out[0] = '\0';
	for (size_t i = 0; i < n; i = seg) {
		char s[1024];
		size_t k = 0;

		for (seg = i + 1; seg < n && p[seg] != '/'; seg++)
			;
		/* One segment, decoded, without its leading '/'. */
		for (size_t j = i + 1; j < seg; j++) {
			c = (unsigned char)p[j];
			if (c == '%' && j + 2 < seg &&
			    isxdigit((unsigned char)p[j + 1]) &&
			    isxdigit((unsigned char)p[j + 2])) {
				sscanf(p + j + 1, "%2x", &c);
				j += 2;
			}
			if (k + 1 >= sizeof(s))
				return -1;
			s[k++] = (char)c;
		}
		s[k] = '\0';
		if (strcmp(s, ".") == 0)
			continue;
		if (strcmp(s, "..") == 0) {
			while (o > 0 && out[--o] != '/')
				;
			out[o] = '\0';
			continue;
		}
		if (put(out, len, &o, '/', 0) == -1)
			return -1;
		for (size_t j = 0; j < k; j++)
			if (put(out, len, &o, (unsigned char)s[j], 0) == -1)
				return -1;
	}
	if (o == 0 && put(out, len, &o, '/', 0) == -1)
		return -1;
	return 0;
}

/*
 * Reads an http:// or https:// URL into *u: its host in one spelling
 * (canon_host()), its port (the scheme's when none is written) and its
 * path as a server reads it.  Returns 0, or -1 if url is not such a URL.
 */
int
receiver_url_parse(const char *url, struct receiver_url *u)
{
	const char *h, *end, *at, *hend, *colon;
	char *e;
	long port;

	memset(u, 0, sizeof(*u));
	if (strncasecmp(url, "http://", 7) == 0) {
		h = url + 7;
		u->port = 80;
	} else if (strncasecmp(url, "https://", 8) == 0) {
		h = url + 8;
		u->port = 443;
	} else {
		return -1;
	}
	end = h + strcspn(h, "/?#");
	for (at = h; at < end; at++)
		if (*at == '@')
			h = at + 1;
	hend = end;
	if (*h == '[')
		hend = memchr(h, ']', (size_t)(end - h))
		    ? (const char *)memchr(h, ']', (size_t)(end - h)) + 1
		    : end;
	else if ((colon = memchr(h, ':', (size_t)(end - h))) != NULL)
		hend = colon;
	if (hend < end && *hend == ':' && hend + 1 < end) {
		port = strtol(hend + 1, &e, 10);
		if (e != end || port < 1 || port > 65535)
			return -1;
		u->port = (int)port;
	}
	if (canon_host(h, (size_t)(hend - h), u->host, sizeof(u->host)) == -1)
		return -1;
	return canon_path(end, strcspn(end, "?#"), u->path, sizeof(u->path));
}

/*
 * Whether the URL u leads to the receiver r: the same port, the same host
 * (host NULL) or, at connect time, the address ip (in canonical form,
 * r_ips one of the receiver's addresses, NULL-terminated), and a path
 * that is r's path or below it ("/receiver" covers "/receiver/x", not
 * "/receivers").  Paths compare without regard to case: a receiver may
 * not care, and a refusal too many is a small price.
 */
int
receiver_url_reaches(const struct receiver_url *r, const struct receiver_url *u,
    const char *const *r_ips, const char *ip)
{
	size_t n = strlen(r->path);

	if (r->host[0] == '\0' || u->port != r->port)
		return 0;
	if (n > 1 && r->path[n - 1] == '/')
		n--;
	if (strncasecmp(u->path, r->path, n) != 0 ||
	    (u->path[n] != '\0' && u->path[n] != '/' && n > 1))
		return 0;
	if (strcmp(u->host, r->host) == 0)
		return 1;
	for (int i = 0; ip != NULL && r_ips != NULL && r_ips[i]; i++)
		if (strcmp(ip, r_ips[i]) == 0)
			return 1;
	return 0;
}

/*
 * Whether url leads to receiver (both URLs as written; "" or an unreadable
 * receiver: nothing does).  An unreadable url does not count: the URL
 * checks refuse it on their own.
 */
int
receiver_reaches(const char *receiver, const char *url)
{
	struct receiver_url r, u;

	if (receiver == NULL || receiver[0] == '\0' ||
	    receiver_url_parse(receiver, &r) == -1 ||
	    receiver_url_parse(url, &u) == -1)
		return 0;
	return receiver_url_reaches(&r, &u, NULL, NULL);
}

/*
 * Writes the value of the X-Cronvisor-Signature header of an event body
 * (len bytes) sent at unix time t, signed with secret, into out (len
 * bytes, RECEIVER_SIG_LEN is enough): "t=<t>,v1=<hex HMAC-SHA256 of
 * "<t>.<body>">".  Returns 0, or -1 if libcrypto fails.
 */
int
receiver_sign(const char *secret, int64_t t, const char *body, size_t len,
    char *out, size_t outlen)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	char *msg;
	int n;
	size_t o;

	/* One buffer: HMAC() is the one-shot API OpenSSL 3 keeps. */
	if (outlen < RECEIVER_SIG_LEN || (msg = malloc(len + 32)) == NULL)
		return -1;
	n = snprintf(msg, 32, "%lld.", (long long)t);
	memcpy(msg + n, body, len);
	if (HMAC(EVP_sha256(), secret, (int)strlen(secret),
	        (const unsigned char *)msg, (size_t)n + len, mac,
	        &maclen) == NULL) {
		free(msg);
		return -1;
	}
	free(msg);
	o = (size_t)snprintf(out, outlen, "t=%lld,v1=", (long long)t);
	for (unsigned int i = 0; i < maclen; i++)
		o += (size_t)snprintf(out + o, outlen - o, "%02x", mac[i]);
	return 0;
}
