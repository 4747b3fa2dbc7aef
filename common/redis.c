/*
 * redis.c: the Redis server a URL names, parsed (pure: a fuzz target) and
 * connected to with hiredis under a time limit, authenticated and on its
 * database.  The forms (docs/configuration.md, redis_url):
 *
 *	redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
 *	unix://PATH[?db=DB]            (PATH absolute: unix:///run/redis.sock)
 *
 * USER and PASSWORD may be percent-encoded; HOST may be an [IPv6] literal.
 * rediss:// (TLS) is refused by name: this build has no TLS for Redis.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "cronvisor.h"

/* Copies n bytes of s into out (len bytes), percent-decoded; -1 if bad. */
static int
redis_decode(const char *s, size_t n, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '%') {
			char hex[3];

			if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
			    !isxdigit((unsigned char)s[i + 2]))
				return -1;
			hex[0] = s[i + 1];
			hex[1] = s[i + 2];
			hex[2] = '\0';
			c = (char)strtol(hex, NULL, 16);
			if (c == '\0')
				return -1;
			i += 2;
		}
		if (o + 1 >= len)
			return -1;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

/* A database number of up to 5 digits, or -1. */
static int
redis_db(const char *s, size_t n)
{
	int v = 0;

	if (n == 0 || n > 5)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/*
 * Parses url into *u.  Returns 0, or -1 with err naming what is wrong
 * (never the password).
 */
int
redis_url_parse(const char *url, struct redis_url *u, char *err, size_t errlen)
{
	const char *p, *at, *host, *end, *slash, *colon;

	memset(u, 0, sizeof(*u));
	u->port = 6379;
	if (strncmp(url, "rediss://", 9) == 0)
		return log_errbuf(err, errlen,
		    "rediss:// (TLS) is not supported: use redis:// or unix://");
	if (strncmp(url, "unix://", 7) == 0) {
		const char *q = strchr(url + 7, '?');
		size_t n =
		    q != NULL ? (size_t)(q - (url + 7)) : strlen(url + 7);

		if (n == 0 || url[7] != '/')
			return log_errbuf(err, errlen,
			    "unix:// needs an absolute path (unix:///run/redis.sock)");
		if (redis_decode(url + 7, n, u->path, sizeof(u->path)) == -1)
			return log_errbuf(err, errlen,
			    "the socket path is too long or badly encoded");
		u->is_unix = 1;
		if (q != NULL) {
			if (strncmp(q, "?db=", 4) != 0 ||
			    (u->db = redis_db(q + 4, strlen(q + 4))) == -1)
				return log_errbuf(err, errlen,
				    "a unix:// URL takes only ?db=N (0-99999)");
		}
		return 0;
	}
	if (strncmp(url, "redis://", 8) != 0)
		return log_errbuf(
		    err, errlen, "a Redis URL starts with redis:// or unix://");
	p = url + 8;
	end = p + strcspn(p, "/?#");
	if (*end == '?' || *end == '#')
		return log_errbuf(
		    err, errlen, "a redis:// URL takes no query or fragment");
	if ((at = memchr(p, '@', (size_t)(end - p))) != NULL) {
		const char *c = memchr(p, ':', (size_t)(at - p));

		if (c == NULL)
			return log_errbuf(err, errlen,
			    "credentials are USER:PASSWORD@ or :PASSWORD@");
		if (redis_decode(
		        p, (size_t)(c - p), u->user, sizeof(u->user)) == -1 ||
		    redis_decode(c + 1, (size_t)(at - c - 1), u->password,
		        sizeof(u->password)) == -1)
			return log_errbuf(err, errlen,
			    "the user or password is too long or badly encoded");
		p = at + 1;
	}
	host = p;
	if (*host == '[') {
		const char *close = memchr(host, ']', (size_t)(end - host));

		if (close == NULL)
			return log_errbuf(
			    err, errlen, "an unclosed [IPv6] host");
		if ((size_t)(close - host - 1) >= sizeof(u->host) ||
		    close == host + 1)
			return log_errbuf(err, errlen, "a bad [IPv6] host");
		memcpy(u->host, host + 1, (size_t)(close - host - 1));
		colon = close + 1 < end && close[1] == ':' ? close + 1 : NULL;
		if (close + 1 < end && colon == NULL)
			return log_errbuf(
			    err, errlen, "junk after the ] of the host");
	} else {
		colon = memchr(host, ':', (size_t)(end - host));
		size_t n = (size_t)((colon != NULL ? colon : end) - host);

		if (n == 0 || n >= sizeof(u->host))
			return log_errbuf(
			    err, errlen, "no host, or one too long");
		memcpy(u->host, host, n);
		for (size_t i = 0; i < n; i++)
			if (!isalnum((unsigned char)host[i]) &&
			    strchr(".-_", host[i]) == NULL)
				return log_errbuf(err, errlen,
				    "the host has a character other than a "
				    "letter, a digit, '.', '-' or '_'");
	}
	if (colon != NULL) {
		int port = redis_db(colon + 1, (size_t)(end - colon - 1));

		if (port < 1 || port > 65535)
			return log_errbuf(
			    err, errlen, "the port is not 1-65535");
		u->port = port;
	}
	if (*end == '/') {
		slash = end + 1;
		if (*slash != '\0' &&
		    (u->db = redis_db(slash, strlen(slash))) == -1)
			return log_errbuf(err, errlen,
			    "the path is a database number (0-99999)");
	}
	return 0;
}

/* Runs one command of argc arguments; 0 if it was not an error reply. */
static int
redis_simple(redisContext *c, int argc, const char **argv, const char *what,
    char *err, size_t errlen)
{
	redisReply *r = redisCommandArgv(c, argc, argv, NULL);
	int rc = 0;

	if (r == NULL)
		return log_errbuf(err, errlen, "%s: %s", what, c->errstr);
	if (r->type == REDIS_REPLY_ERROR)
		rc = log_errbuf(err, errlen, "%s: %.200s", what, r->str);
	freeReplyObject(r);
	return rc;
}

/*
 * Connects to the server of u (at the address addr instead of its host,
 * if not NULL: one the caller resolved and checked) within timeout_ms,
 * which then limits every command too; authenticates and selects its
 * database.  Returns the connection, or NULL with err set.
 */
redisContext *
redis_connect(const struct redis_url *u, const char *addr, int64_t timeout_ms,
    char *err, size_t errlen)
{
	struct timeval tv = {
	    .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
	const char *host = addr != NULL ? addr : u->host;
	redisContext *c;
	char db[16];

	c = u->is_unix ? redisConnectUnixWithTimeout(u->path, tv)
	               : redisConnectWithTimeout(host, u->port, tv);
	if (c == NULL) {
		log_errbuf(err, errlen, "out of memory");
		return NULL;
	}
	if (c->err != 0) {
		if (u->is_unix)
			log_errbuf(err, errlen, "%s: %s", u->path, c->errstr);
		else
			log_errbuf(err, errlen, "%s port %d: %s", u->host,
			    u->port, c->errstr);
		redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	if (u->password[0] != '\0') {
		const char *auth[3] = {"AUTH", u->user, u->password};

		if (u->user[0] == '\0')
			auth[1] = u->password;
		if (redis_simple(c, u->user[0] != '\0' ? 3 : 2, auth, "AUTH",
		        err, errlen) == -1) {
			redisFree(c);
			return NULL;
		}
	}
	if (u->db != 0) {
		const char *sel[2] = {"SELECT", db};

		snprintf(db, sizeof(db), "%d", u->db);
		if (redis_simple(c, 2, sel, "SELECT", err, errlen) == -1) {
			redisFree(c);
			return NULL;
		}
	}
	return c;
}

/* redis_connect() to the server of url, parsed here; NULL with err set. */
redisContext *
redis_open(const char *url, int64_t timeout_ms, char *err, size_t errlen)
{
	struct redis_url u;
	redisContext *c;

	if (redis_url_parse(url, &u, err, errlen) == -1)
		return NULL;
	c = redis_connect(&u, NULL, timeout_ms, err, errlen);
	explicit_bzero(&u, sizeof(u));
	return c;
}

/*
 * 1 if host names the local host's loopback as written: "localhost", an
 * address of 127.0.0.0/8, ::1, a v4-mapped form of one, or an unspecified
 * address (0.0.0.0, ::: it reaches the local listeners); else 0.
 */
int
redis_host_local(const char *host)
{
	unsigned char a6[16];
	struct in_addr a4;
	size_t n = strlen(host);

	if ((n == 9 || (n == 10 && host[9] == '.')) &&
	    strncasecmp(host, "localhost", 9) == 0)
		return 1;
	if (inet_pton(AF_INET6, host, a6) == 1) {
		static const unsigned char mapped[12] = {
		    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		static const unsigned char zero[16], one[16] = {[15] = 1};

		if (memcmp(a6, one, 16) == 0 || memcmp(a6, zero, 16) == 0)
			return 1;
		if (memcmp(a6, mapped, 12) != 0)
			return 0;
		memcpy(&a4, a6 + 12, 4);
	} else if (inet_pton(AF_INET, host, &a4) != 1)
		return 0;
	return (ntohl(a4.s_addr) >> 24) == 127 || a4.s_addr == 0;
}
