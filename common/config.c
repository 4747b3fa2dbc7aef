/*
 * config.c: the settings every cronvisor process reads at start, from
 * /etc/cronvisor/cronvisor.conf and then from CRONVISOR_* environment
 * variables.  The file is a list of `key = value` lines; blank lines and
 * lines whose first non-blank character is '#' are comments; a value may be
 * double-quoted, with \" and \\ as its only escapes.  Every setting is one
 * row of config_keys[] below (name, type, field, range, default, doc):
 * defaults, parsing, environment overrides and printing all walk that one
 * table, so a new setting is a new field in struct config and a new row
 * here.  Every entry point fills a copy and swaps it in only on success, so
 * that bad input (a typo in a reloaded file, a stray environment variable)
 * changes nothing.  Messages name the place, the key and the problem, and
 * never echo a database_url, which may hold a password.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "cronvisor.h"

#define CONFIG_LINE_MAX   4096          /* longest line, without its '\n' */
#define CONFIG_FILE_MAX   (1024 * 1024) /* largest file config_load reads */
#define CONFIG_URL_MAX    2048          /* longest URL or conninfo */
#define CONFIG_HOSTS_MAX  4000          /* longest host list */
#define CONFIG_ENV_PREFIX "CRONVISOR_"  /* prefix of the override variables */
#define CONFIG_MASK       "***" /* what config_print shows for secrets */
#define CONFIG_QUOTE_MAX  40    /* bytes of a value quoted in messages */
#define CONFIG_QUOTE_LEN  (CONFIG_QUOTE_MAX * 4 + 8) /* config_quote buffer */

enum config_type {
	CONFIG_TYPE_STRING,   /* char *, length 0..max bytes */
	CONFIG_TYPE_CONNINFO, /* char *, like STRING; passwords masked */
	CONFIG_TYPE_SECRET,   /* char *, like STRING; printed masked */
	CONFIG_TYPE_INT,      /* int64_t, decimal, min..max */
	CONFIG_TYPE_LEVEL,    /* enum log_level, by name */
	CONFIG_TYPE_LISTEN,   /* char *, unix:/path or loopback:port min..max */
	CONFIG_TYPE_MODE,     /* char *, octal permission bits min..max */
	CONFIG_TYPE_HOSTS,    /* char *, a host list (hostlist.c), <= max */
	CONFIG_TYPE_USER,     /* char *, a user name or "" (runuser.c) */
	CONFIG_TYPE_USERS,    /* char *, owner:user,… (runuser.c), <= max */
	CONFIG_TYPE_ZONE,     /* char *, an IANA zone tz_get() reads */
};

struct config_key {
	const char *name;      /* key in the file, field of struct config */
	enum config_type type; /* how the value is read, stored and printed */
	size_t offset;         /* of the field in struct config */
	int64_t min;           /* lower bound, see enum config_type */
	int64_t max;           /* upper bound, see enum config_type */
	const char *def;       /* default, as it would be written in the file */
	const char *doc;       /* one line for humans */
};

/*
 * The offset of field f of struct config, which must have type t: a row
 * whose type does not match its field does not compile (the _Generic has no
 * association for it) instead of storing an int64_t over a char *.
 */
#define CONFIG_FIELD(f, t)                                                     \
	(offsetof(struct config, f) +                                          \
	    0 * sizeof(_Generic(((struct config *)0)->f, t : 1)))
/* clang-format would take these braces for a block. */
/* clang-format off */
#define CONFIG_KEY(f, t, type, min, max, def, doc) \
	{#f, type, CONFIG_FIELD(f, t), min, max, def, doc}
/* clang-format on */
#define CONFIG_KEY_STR(f, max, def, doc)                                       \
	CONFIG_KEY(f, char *, CONFIG_TYPE_STRING, 0, max, def, doc)
#define CONFIG_KEY_INT(f, min, max, def, doc)                                  \
	CONFIG_KEY(f, int64_t, CONFIG_TYPE_INT, min, max, def, doc)

/* Every setting, in the order of struct config and of config_print(). */
static const struct config_key config_keys[] = {
    CONFIG_KEY(database_url, char *, CONFIG_TYPE_CONNINFO, 0, CONFIG_URL_MAX,
        "postgresql:///cronvisor", "libpq conninfo or URI of the database"),
    CONFIG_KEY_INT(db_timeout_ms, 100, 600000, "10000",
        "ms a database statement, connect or silent connection may take"),
    CONFIG_KEY_STR(redis_url, CONFIG_URL_MAX, "redis://127.0.0.1:6379",
        "Redis server of redis targets that name none, and of events_stream"),
    CONFIG_KEY_STR(redis_key_prefix, 256, "cronvisor:",
        "before each owner's keys on redis_url: PREFIX OWNER:KEY"),
    CONFIG_KEY_STR(events_stream, 256, "",
        "Redis stream the live events are published to; \"\" = none"),
    CONFIG_KEY_INT(events_stream_maxlen, 100, 100000000, "100000",
        "events the Redis stream keeps, about (XADD MAXLEN ~)"),
    CONFIG_KEY_INT(events_retention_hours, 1, 87600, "168",
        "hours the database keeps an event"),
    CONFIG_KEY_STR(smtp_url, CONFIG_URL_MAX, "",
        "the SMTP server of e-mail notifications; \"\" = none"),
    CONFIG_KEY_STR(smtp_from, 256, "cronvisor@localhost",
        "the sender of e-mail notifications"),
    CONFIG_KEY_INT(notify_timeout_seconds, 1, 300, "10",
        "seconds one notification's delivery may take"),
    CONFIG_KEY_STR(receiver_url, CONFIG_URL_MAX, "",
        "where schedules without a target POST their event; \"\" = none"),
    CONFIG_KEY(receiver_secret, char *, CONFIG_TYPE_SECRET, 0, 1024, "",
        "HMAC-SHA256 key signing the receiver's events; \"\" = unsigned"),
    CONFIG_KEY_STR(agent_callback_url, CONFIG_URL_MAX, "",
        "the API's URL as agents reach it, for their reports; \"\" = none"),
    CONFIG_KEY_INT(max_concurrent_requests, 1, 100000, "50",
        "agent requests in flight at once, across every supervisor"),
    CONFIG_KEY_STR(datasource_role, 63, "cronvisor_reader",
        "the read-only database role data-source queries run as"),
    CONFIG_KEY_INT(datasource_row_limit, 1, 10000000, "100000",
        "rows a data-source string may expand to at most"),
    CONFIG_KEY_INT(datasource_timeout_ms, 100, 600000, "5000",
        "ms a data-source query may take"),
    CONFIG_KEY_INT(fanout_batch_size, 1, 10000, "10",
        "jobs per batch of a fan-out, unless its string says batchSize"),
    CONFIG_KEY_INT(fanout_stagger_ms, 0, 3600000, "1000",
        "ms between a fan-out's batches, unless it says staggerDelay"),
    CONFIG_KEY_STR(supervisor_name, 255, "",
        "this supervisor's name in runs and heartbeats; \"\" = host name"),
    CONFIG_KEY(log_level, enum log_level, CONFIG_TYPE_LEVEL, 0, 0, "info",
        "warn, info or debug"),
    CONFIG_KEY_INT(max_concurrent_runs, 1, 100000, "64",
        "runs in flight at once per supervisor"),
    CONFIG_KEY_INT(
        claim_batch, 1, 10000, "100", "schedules claimed per transaction"),
    CONFIG_KEY_INT(claim_ahead_ms, 0, 1000, "50",
        "ms before its instant a slot is claimed; its runner waits for it"),
    CONFIG_KEY_INT(heartbeat_seconds, 1, 3600, "5",
        "seconds between a supervisor's heartbeats"),
    CONFIG_KEY_INT(lease_seconds, 2, 86400, "30",
        "heartbeat age that declares a supervisor dead; > heartbeat_seconds"),
    CONFIG_KEY_INT(shutdown_grace_seconds, 0, 86400, "30",
        "on SIGTERM, how long running runs may finish"),
    CONFIG_KEY_INT(kill_grace_seconds, 0, 3600, "5",
        "SIGTERM to SIGKILL when a run times out"),
    CONFIG_KEY_INT(output_tail_bytes, 0, RESULT_OUTPUT_MAX, "16384",
        "bytes of output kept per run"),
    CONFIG_KEY_INT(default_timeout_seconds, 1, 31536000, "600",
        "timeout of runs whose schedule sets none"),
    CONFIG_KEY(default_timezone, char *, CONFIG_TYPE_ZONE, 0, 255, "UTC",
        "timezone of schedules created without one"),
    CONFIG_KEY_INT(limit_cpu_seconds, 0, 31536000, "600",
        "RLIMIT_CPU default and maximum; 0 = unlimited"),
    CONFIG_KEY_INT(limit_memory_mb, 0, 4194304, "1024",
        "RLIMIT_AS default and maximum in MiB; 0 = unlimited"),
    CONFIG_KEY_INT(limit_nofile, 0, 1048576, "1024",
        "RLIMIT_NOFILE default and maximum; 0 = unlimited"),
    CONFIG_KEY_INT(limit_nproc, 0, 4194304, "256",
        "RLIMIT_NPROC default and maximum; 0 = unlimited"),
    CONFIG_KEY_INT(limit_fsize_mb, 0, 16777216, "1024",
        "RLIMIT_FSIZE default and maximum in MiB; 0 = unlimited"),
    CONFIG_KEY(api_listen, char *, CONFIG_TYPE_LISTEN, 1, 65535,
        "unix:/run/cronvisor/api.sock",
        "unix:/path, or 127.0.0.1:port, [::1]:port, localhost:port"),
    CONFIG_KEY(api_socket_mode, char *, CONFIG_TYPE_MODE, 0, 0777, "0660",
        "octal permissions of the API socket"),
    CONFIG_KEY_STR(api_socket_group, 32, "www-data",
        "group of the API socket; \"\" = the process's own"),
    CONFIG_KEY_INT(api_threads, 1, 1024, "8", "FastCGI worker threads"),
    CONFIG_KEY_INT(api_max_body_bytes, 1024, 67108864, "1048576",
        "largest request body the API accepts"),
    CONFIG_KEY_INT(api_io_timeout_seconds, 1, 3600, "10",
        "longest wait for one read or write on a FastCGI connection"),
    CONFIG_KEY(metrics_allow, char *, CONFIG_TYPE_HOSTS, 0, CONFIG_HOSTS_MAX,
        "127.0.0.0/8,::1",
        "client addresses GET /metrics answers without a token; \"\" = none"),
    CONFIG_KEY(metrics_token, char *, CONFIG_TYPE_SECRET, 0, 1024, "",
        "the bearer token GET /metrics takes from anywhere; \"\" = none"),
    CONFIG_KEY(http_allow_hosts, char *, CONFIG_TYPE_HOSTS, 0, CONFIG_HOSTS_MAX,
        "", "hosts HTTP targets may reach; \"\" = any"),
    CONFIG_KEY(http_deny_hosts, char *, CONFIG_TYPE_HOSTS, 0, CONFIG_HOSTS_MAX,
        "169.254.0.0/16,fe80::/10,fd00:ec2::254,100.100.100.200,0.0.0.0/8,::",
        "hosts HTTP targets may never reach; wins over allow"),
    CONFIG_KEY_INT(http_max_redirects, 0, 20, "0",
        "redirects an HTTP target follows, each hop checked"),
    CONFIG_KEY(run_users, char *, CONFIG_TYPE_USERS, 0, CONFIG_HOSTS_MAX, "",
        "owner:user,... the Unix user each owner's runs run as; never root"),
    CONFIG_KEY(run_user_default, char *, CONFIG_TYPE_USER, 0, RUNUSER_NAME_MAX,
        "cronvisor-run",
        "the user of owners run_users omits; \"\" = none: no exec targets"),
    CONFIG_KEY_INT(owner_max_running, 0, 100000, "0",
        "runs in flight of one owner; 0 = half of max_concurrent_runs"),
    CONFIG_KEY_INT(owner_max_schedules, 0, 100000000, "10000",
        "schedules one owner may have; 0 = unlimited"),
    CONFIG_KEY_INT(owner_max_triggers_per_minute, 0, 1000000, "60",
        "trigger requests of one non-admin owner per minute; 0 = unlimited"),
    CONFIG_KEY_INT(max_timeout_seconds, 0, 31536000, "86400",
        "largest timeout_seconds a non-admin may set; 0 = unlimited"),
};
#define CONFIG_NKEYS (sizeof(config_keys) / sizeof(config_keys[0]))

/* One config_parse() call: where it is and what it has seen. */
struct config_ctx {
	struct config *cf;          /* the copy being filled */
	const char *source;         /* file name for messages */
	size_t line;                /* current line, from 1 */
	size_t first[CONFIG_NKEYS]; /* line that set each key, 0: none */
	char *err;                  /* the caller's message buffer */
	size_t errlen;              /* its size */
};

static void *
config_field(struct config *cf, const struct config_key *k)
{
	return (char *)cf + k->offset;
}

static const void *
config_cfield(const struct config *cf, const struct config_key *k)
{
	return (const char *)cf + k->offset;
}

/* Whether the key's field is a char * that the config owns. */
static int
config_is_string(const struct config_key *k)
{
	return k->type != CONFIG_TYPE_INT && k->type != CONFIG_TYPE_LEVEL;
}

static int
config_is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static char *
config_skip(char *s)
{
	while (config_is_blank(*s))
		s++;
	return s;
}

static void
config_rtrim(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && config_is_blank(s[n - 1]))
		s[--n] = '\0';
}

/*
 * Renders s for a message: in double quotes, with '"', '\' and bytes that
 * are not printable ASCII escaped, and cut to "..." after CONFIG_QUOTE_MAX
 * bytes, so that a stray binary byte or a pasted megabyte cannot garble a
 * log line.  buf holds CONFIG_QUOTE_LEN bytes; returns buf.
 */
static const char *
config_quote(const char *s, char *buf)
{
	size_t i, o = 0;

	buf[o++] = '"';
	for (i = 0; s[i] != '\0' && i < CONFIG_QUOTE_MAX; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			buf[o++] = '\\';
		if (c < 0x20 || c >= 0x7f)
			o += (size_t)snprintf(buf + o, 5, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	if (s[i] != '\0') {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

static const struct config_key *
config_find(const char *name)
{
	for (size_t i = 0; i < CONFIG_NKEYS; i++)
		if (strcmp(config_keys[i].name, name) == 0)
			return &config_keys[i];
	return NULL;
}

/*
 * Parses a decimal integer in min..max: an optional '-' and digits, nothing
 * else (no blanks, '+', "0x" or trailing text), and no overflow.
 */
static int
config_parse_int(const char *v, int64_t min, int64_t max, int64_t *out,
    char *why, size_t whylen)
{
	char q[CONFIG_QUOTE_LEN];
	const char *d = v + (v[0] == '-');
	long long n;

	if (*d == '\0' || d[strspn(d, "0123456789")] != '\0') {
		snprintf(why, whylen, "%s is not a decimal integer",
		    config_quote(v, q));
		return -1;
	}
	errno = 0;
	n = strtoll(v, NULL, 10);
	if (errno == ERANGE || n < min || n > max) {
		snprintf(why, whylen,
		    "%.24s%s is out of range %" PRId64 "-%" PRId64, v,
		    strlen(v) > 24 ? "..." : "", min, max);
		return -1;
	}
	*out = n;
	return 0;
}

static int
config_set_level(enum log_level *out, const char *v, char *why, size_t whylen)
{
	char q[CONFIG_QUOTE_LEN];

	if (log_level_parse(v, out) == -1) {
		snprintf(why, whylen, "%s is not one of %s, %s, %s",
		    config_quote(v, q), log_level_name(LOG_LEVEL_WARN),
		    log_level_name(LOG_LEVEL_INFO),
		    log_level_name(LOG_LEVEL_DEBUG));
		return -1;
	}
	return 0;
}

/*
 * Checks an API address: "unix:/path" with a path that fits in sun_path,
 * or a loopback host and a port in k's range.  Anything that listens
 * beyond this machine is refused: the API trusts nginx in front of it.
 */
static int
config_check_listen(
    const struct config_key *k, const char *v, char *why, size_t whylen)
{
	static const char *const hosts[] = {"127.0.0.1", "[::1]", "localhost"};
	size_t pathmax = sizeof(((struct sockaddr_un *)0)->sun_path) - 1;
	char q[CONFIG_QUOTE_LEN], portwhy[CV_ERRLEN - 8];
	const char *colon = strrchr(v, ':');
	int64_t port;

	if (strncmp(v, "unix:/", 6) == 0) {
		if (strlen(v + 5) <= pathmax)
			return 0;
		snprintf(why, whylen, "socket path is longer than %zu bytes",
		    pathmax);
		return -1;
	}
	for (size_t i = 0; colon && i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		if (strlen(hosts[i]) != (size_t)(colon - v) ||
		    strncmp(v, hosts[i], (size_t)(colon - v)) != 0)
			continue;
		if (config_parse_int(colon + 1, k->min, k->max, &port, portwhy,
		        sizeof(portwhy)) == 0)
			return 0;
		snprintf(why, whylen, "port %s", portwhy);
		return -1;
	}
	snprintf(why, whylen,
	    "%s is not unix:/PATH, 127.0.0.1:PORT, [::1]:PORT or localhost:PORT",
	    config_quote(v, q));
	return -1;
}

/* Checks an octal mode: one to four octal digits, value in k's range. */
static int
config_check_mode(
    const struct config_key *k, const char *v, char *why, size_t whylen)
{
	char q[CONFIG_QUOTE_LEN];
	size_t n = strspn(v, "01234567");
	long mode = strtol(v, NULL, 8);

	if (n == 0 || n > 4 || v[n] != '\0' || mode < k->min || mode > k->max) {
		snprintf(why, whylen, "%s is not an octal mode %04o-%04o",
		    config_quote(v, q), (unsigned)k->min, (unsigned)k->max);
		return -1;
	}
	return 0;
}

/*
 * Checks a host list (http_allow_hosts, http_deny_hosts): every element a
 * name, *.suffix, address or CIDR block (common/hostlist.c).  The config
 * keeps the text; the runner and the API parse it where they use it.
 */
static int
config_check_hosts(const char *v, char *why, size_t whylen)
{
	struct hostlist hl;
	int r = hostlist_parse(&hl, v, why, whylen);

	hostlist_clear(&hl);
	return r;
}

/* Stores a copy of v in *field, freeing the old value. */
static int
config_set_string(char **field, const char *v, char *why, size_t whylen)
{
	char *s;

	if ((s = strdup(v)) == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	free(*field);
	*field = s;
	return 0;
}

/*
 * Checks value v for key k and stores it in cf.  Control characters are
 * refused everywhere: no setting needs one, and a value without them can
 * always be printed back as one line.  Returns 0, or -1 with the problem in
 * why (without place or key, which the caller adds); cf is then unchanged.
 */
static int
config_set(struct config *cf, const struct config_key *k, const char *v,
    char *why, size_t whylen)
{
	void *field = config_field(cf, k);

	for (const char *p = v; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			snprintf(why, whylen, "control character in value");
			return -1;
		}
	switch (k->type) {
	case CONFIG_TYPE_INT:
		return config_parse_int(v, k->min, k->max, field, why, whylen);
	case CONFIG_TYPE_LEVEL:
		return config_set_level(field, v, why, whylen);
	case CONFIG_TYPE_LISTEN:
		if (config_check_listen(k, v, why, whylen) == -1)
			return -1;
		break;
	case CONFIG_TYPE_MODE:
		if (config_check_mode(k, v, why, whylen) == -1)
			return -1;
		break;
	case CONFIG_TYPE_USER:
	case CONFIG_TYPE_USERS:
		if (runuser_check(
		        v, k->type == CONFIG_TYPE_USERS, why, whylen) == -1)
			return -1;
		/* FALLTHROUGH */
	case CONFIG_TYPE_ZONE:
		if (k->type == CONFIG_TYPE_ZONE &&
		    tz_get(v, why, whylen) == NULL)
			return -1;
		/* FALLTHROUGH */
	case CONFIG_TYPE_HOSTS:
		if (k->type == CONFIG_TYPE_HOSTS &&
		    config_check_hosts(v, why, whylen) == -1)
			return -1;
		/* FALLTHROUGH */
	case CONFIG_TYPE_STRING:
	case CONFIG_TYPE_CONNINFO:
	case CONFIG_TYPE_SECRET:
		if (strlen(v) > (size_t)k->max) {
			snprintf(why, whylen, "longer than %" PRId64 " bytes",
			    k->max);
			return -1;
		}
		break;
	}
	return config_set_string(field, v, why, whylen);
}

/*
 * Makes dst a deep copy of src.  Returns 0, or -1 with errno set (ENOMEM)
 * and dst holding nothing to free.
 */
static int
config_copy(struct config *dst, const struct config *src)
{
	const struct config_key *k;

	*dst = *src;
	for (k = config_keys; k < config_keys + CONFIG_NKEYS; k++)
		if (config_is_string(k))
			*(char **)config_field(dst, k) = NULL;
	for (k = config_keys; k < config_keys + CONFIG_NKEYS; k++) {
		const char *s;
		char **d;

		if (!config_is_string(k))
			continue;
		s = *(char *const *)config_cfield(src, k);
		d = config_field(dst, k);
		if (s != NULL && (*d = strdup(s)) == NULL) {
			config_clear(dst);
			errno = ENOMEM;
			return -1;
		}
	}
	return 0;
}

/*
 * Sets every setting to its default.  cf is overwritten without freeing
 * what it held: pass a new struct, or one config_clear() emptied.  Exits
 * via fatalx() if memory runs out (only at start or reload) or if a
 * default in the table is invalid, a bug the tests catch.
 */
void
config_defaults(struct config *cf)
{
	char why[CV_ERRLEN];

	memset(cf, 0, sizeof(*cf));
	for (size_t i = 0; i < CONFIG_NKEYS; i++)
		if (config_set(cf, &config_keys[i], config_keys[i].def, why,
		        sizeof(why)) == -1)
			fatalx("config: default of %s: %s", config_keys[i].name,
			    why);
}

/* Formats "source:line: message" into the caller's buffer; returns -1. */
static int CV_PRINTF(2, 3)
    config_fail(struct config_ctx *cx, const char *fmt, ...)
{
	char msg[CV_ERRLEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(cx->err, cx->errlen, "%s:%zu: %s", cx->source, cx->line, msg);
	return -1;
}

/*
 * Extracts the value after '=': blanks around it are dropped; a quoted
 * value loses its quotes and escapes (in place).  An unquoted value may not
 * contain '#' (comments take a whole line, and a '#' in a password must not
 * silently cut it) or '"'.  Returns the value, or NULL with why set.
 */
static char *
config_value(char *v, char *why, size_t whylen)
{
	char *r, *w;

	v = config_skip(v);
	config_rtrim(v);
	if (*v != '"') {
		if ((r = strpbrk(v, "#\"")) != NULL) {
			snprintf(why, whylen,
			    "unquoted value contains '%c': quote the value%s",
			    *r,
			    *r == '#' ? " (comments take a whole line)" : "");
			return NULL;
		}
		return v;
	}
	for (r = w = v + 1; *r != '"'; r++) {
		int esc = *r == '\\';

		r += esc;
		if (*r == '\0') {
			snprintf(why, whylen, "unterminated quoted value");
			return NULL;
		}
		if (esc && *r != '"' && *r != '\\') {
			snprintf(why, whylen,
			    "bad escape in quoted value "
			    "(only \\\" and \\\\ are allowed)");
			return NULL;
		}
		*w++ = *r;
	}
	if (r[1] != '\0') {
		snprintf(why, whylen, "text after the closing quote");
		return NULL;
	}
	*w = '\0';
	return v + 1;
}

/* Parses one line (n bytes, without its '\n') into cx->cf. */
static int
config_line(struct config_ctx *cx, const char *line, size_t n)
{
	char buf[CONFIG_LINE_MAX + 1], why[CV_ERRLEN], q[CONFIG_QUOTE_LEN];
	const struct config_key *k;
	char *s, *eq, *v;

	if (n > CONFIG_LINE_MAX)
		return config_fail(
		    cx, "line is longer than %d bytes", CONFIG_LINE_MAX);
	if (memchr(line, '\0', n) != NULL)
		return config_fail(cx, "NUL byte in line");
	memcpy(buf, line, n);
	buf[n] = '\0';
	s = config_skip(buf);
	if (*s == '\0' || *s == '#')
		return 0;
	if ((eq = strchr(s, '=')) == NULL || eq == s)
		return config_fail(cx, "expected key = value");
	*eq = '\0';
	config_rtrim(s);
	if ((k = config_find(s)) == NULL)
		return config_fail(cx, "unknown key %s", config_quote(s, q));
	if (cx->first[k - config_keys] != 0)
		return config_fail(cx, "%s is set twice (first on line %zu)",
		    k->name, cx->first[k - config_keys]);
	cx->first[k - config_keys] = cx->line;
	if ((v = config_value(eq + 1, why, sizeof(why))) == NULL ||
	    config_set(cx->cf, k, v, why, sizeof(why)) == -1)
		return config_fail(cx, "%s: %s", k->name, why);
	return 0;
}

/*
 * Applies the settings in text (len bytes, not necessarily NUL-terminated)
 * on top of cf, which must hold a configuration (config_defaults() or an
 * earlier parse).  A key may appear once per text.  source names the text
 * in messages ("source:line: problem").  Returns 0; or -1 with the message
 * in err, and cf exactly as it was.  Cross-field checks are not made here:
 * config_load() makes them once the environment is applied too.
 */
int
config_parse(struct config *cf, const char *text, size_t len,
    const char *source, char *err, size_t errlen)
{
	struct config tmp;
	struct config_ctx cx = {
	    .cf = &tmp, .source = source, .err = err, .errlen = errlen};
	size_t off = 0;

	if (config_copy(&tmp, cf) == -1) {
		snprintf(err, errlen, "%s: out of memory", source);
		return -1;
	}
	while (off < len) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - (text + off)) : len - off;

		cx.line++;
		if (config_line(&cx, text + off, n) == -1) {
			config_clear(&tmp);
			return -1;
		}
		off += n + 1;
	}
	config_clear(cf);
	*cf = tmp;
	return 0;
}

/* Writes CRONVISOR_<NAME IN UPPER CASE> into buf (len bytes). */
static void
config_env_name(const struct config_key *k, char *buf, size_t len)
{
	size_t o = strlen(CONFIG_ENV_PREFIX);

	memcpy(buf, CONFIG_ENV_PREFIX, o);
	for (const char *p = k->name; *p != '\0' && o + 1 < len; p++)
		buf[o++] =
		    (*p >= 'a' && *p <= 'z') ? (char)(*p - 'a' + 'A') : *p;
	buf[o] = '\0';
}

/*
 * Applies the environment overrides on top of cf (which must hold a
 * configuration): CRONVISOR_DATABASE_URL and so on, one per key, taken
 * literally (no quotes, no trimming; set but empty means ""; other
 * CRONVISOR_* variables belong to other tools and are ignored).  Returns 0;
 * or -1 with "environment NAME: problem" in err and cf unchanged.
 */
int
config_env(struct config *cf, char *err, size_t errlen)
{
	struct config tmp;
	char name[64], why[CV_ERRLEN];
	const char *v;

	if (config_copy(&tmp, cf) == -1) {
		snprintf(err, errlen, "environment: out of memory");
		return -1;
	}
	for (size_t i = 0; i < CONFIG_NKEYS; i++) {
		config_env_name(&config_keys[i], name, sizeof(name));
		if ((v = getenv(name)) == NULL)
			continue;
		if (config_set(&tmp, &config_keys[i], v, why, sizeof(why)) ==
		    -1) {
			snprintf(err, errlen, "environment %s: %s", name, why);
			config_clear(&tmp);
			return -1;
		}
	}
	config_clear(cf);
	*cf = tmp;
	return 0;
}

/* The checks that involve more than one setting, made once all are in. */
static int
config_check(const struct config *cf, char *err, size_t errlen)
{
	if (cf->lease_seconds <= cf->heartbeat_seconds) {
		snprintf(err, errlen,
		    "lease_seconds (%" PRId64 ") must be greater than "
		    "heartbeat_seconds (%" PRId64 ")",
		    cf->lease_seconds, cf->heartbeat_seconds);
		return -1;
	}
	return 0;
}

/*
 * Reads the file for config_load().  A missing file is no error unless
 * must_exist; then *buf stays NULL.
 */
static int
config_read(const char *path, int must_exist, unsigned char **buf, size_t *len,
    char *err, size_t errlen)
{
	*buf = NULL;
	if (io_read_file(path, CONFIG_FILE_MAX, buf, len) == 0)
		return 0;
	if (errno == ENOENT && !must_exist)
		return 0;
	if (errno == EFBIG)
		snprintf(
		    err, errlen, "cannot read %s: larger than 1 MiB", path);
	else if (errno == EINVAL)
		snprintf(
		    err, errlen, "cannot read %s: not a regular file", path);
	else
		snprintf(
		    err, errlen, "cannot read %s: %s", path, strerror(errno));
	return -1;
}

/*
 * Loads the configuration: defaults, then the file at path (at most 1 MiB;
 * a missing file is fine unless must_exist), then the environment, then
 * the cross-field checks.  cf must hold a configuration or be zero-filled;
 * on success its old strings are freed and it holds the new one, which the
 * caller releases with config_clear().  Returns 0; or -1 with the message
 * in err and cf unchanged, so that a bad reload keeps the running setup.
 */
int
config_load(struct config *cf, const char *path, int must_exist, char *err,
    size_t errlen)
{
	struct config tmp;
	unsigned char *buf;
	size_t len;
	int rc = -1;

	config_defaults(&tmp);
	if (config_read(path, must_exist, &buf, &len, err, errlen) == -1)
		goto out;
	if (buf != NULL &&
	    config_parse(&tmp, (const char *)buf, len, path, err, errlen) == -1)
		goto out;
	if (config_env(&tmp, err, errlen) == -1 ||
	    config_check(&tmp, err, errlen) == -1)
		goto out;
	config_clear(cf);
	*cf = tmp;
	rc = 0;
out:
	if (rc == -1)
		config_clear(&tmp);
	free(buf);
	return rc;
}

/* Whether a name in a conninfo or URI query is one whose value is secret. */
static int
config_is_secret(const char *name, size_t n)
{
	return (n == 8 && strncmp(name, "password", n) == 0) ||
	    (n == 11 && strncmp(name, "sslpassword", n) == 0);
}

static int
config_is_uri(const char *s)
{
	return strncmp(s, "postgresql://", 13) == 0 ||
	    strncmp(s, "postgres://", 11) == 0;
}

/*
 * Reads one "keyword = value" pair of a libpq conninfo from *pos on, the
 * way libpq's conninfo_parse() does: a value is single-quoted (with '\'
 * escaping the next byte) or runs to the next blank (likewise).  Sets the
 * keyword and the value's raw extent.  Returns 1 for a pair, 0 at the end,
 * -1 if the text is not a conninfo.
 */
static int
config_conninfo_pair(const char *s, size_t *pos, size_t kw[2], size_t val[2])
{
	size_t p = *pos;
	int quoted;

	while (s[p] == ' ')
		p++;
	if (s[p] == '\0')
		return 0;
	for (kw[0] = p; s[p] != '\0' && s[p] != ' ' && s[p] != '='; p++)
		;
	kw[1] = p;
	while (s[p] == ' ')
		p++;
	if (s[p] != '=' || kw[1] == kw[0])
		return -1;
	for (p++; s[p] == ' '; p++)
		;
	val[0] = p;
	quoted = s[p] == '\'';
	for (p += (size_t)quoted; s[p] != '\0'; p++) {
		if (s[p] == '\\' && s[p + 1] != '\0')
			p++;
		else if (quoted ? s[p] == '\'' : s[p] == ' ')
			break;
	}
	if (quoted && s[p++] != '\'')
		return -1;
	val[1] = p;
	*pos = p;
	return 1;
}

/*
 * Whether a conninfo value must be hidden: a password, or a dbname that
 * libpq expands as a connection string or URI of its own ("If this
 * parameter contains an = sign or starts with a valid URI prefix") and
 * that looks as if it could carry one.
 */
static int
config_conninfo_secret(const char *s, const size_t kw[2], const size_t val[2])
{
	size_t n = val[1] - val[0];

	if (config_is_secret(s + kw[0], kw[1] - kw[0]))
		return 1;
	if (kw[1] - kw[0] != 6 || strncmp(s + kw[0], "dbname", 6) != 0)
		return 0;
	return memmem(s + val[0], n, "password", 8) != NULL ||
	    memchr(s + val[0], '@', n) != NULL;
}

/*
 * Writes conninfo s to m with secret values replaced by CONFIG_MASK; with
 * m NULL only checks that s parses.  Returns 0, or -1 if it does not.
 */
static int
config_mask_conninfo(const char *s, FILE *m)
{
	size_t pos = 0, done = 0, kw[2], val[2];
	int r;

	while ((r = config_conninfo_pair(s, &pos, kw, val)) == 1) {
		if (m == NULL || !config_conninfo_secret(s, kw, val))
			continue;
		fwrite(s + done, 1, val[0] - done, m);
		fputs(CONFIG_MASK, m);
		/* libpq needs no blank after a quoted value: 'x'port=5. */
		if (s[val[1]] != '\0' && s[val[1]] != ' ')
			fputc(' ', m);
		done = val[1];
	}
	if (m != NULL)
		fputs(s + done, m);
	return r;
}

/* Writes a URI query (after '?') to m with secret parameters masked. */
static void
config_mask_query(const char *q, FILE *m)
{
	while (*q != '\0') {
		size_t n = strcspn(q, "&");
		const char *eq = memchr(q, '=', n);

		if (eq != NULL && config_is_secret(q, (size_t)(eq - q))) {
			fwrite(q, 1, (size_t)(eq + 1 - q), m);
			fputs(CONFIG_MASK, m);
		} else
			fwrite(q, 1, n, m);
		q += n;
		if (*q == '&')
			fputc(*q++, m);
	}
}

/*
 * Writes a postgresql:// URI to m with the password of its userinfo and
 * any password parameters masked.  The userinfo is taken to run to the
 * last '@', not the first as libpq reads it: a password holding an
 * unencoded '/' or '?' is still hidden, at worst with more around it.
 */
static void
config_mask_uri(const char *s, FILE *m)
{
	const char *auth = strstr(s, "://") + 3;
	const char *at = strrchr(auth, '@');
	const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
	const char *from = s, *q;

	if (colon != NULL) {
		fwrite(s, 1, (size_t)(colon + 1 - s), m);
		fputs(CONFIG_MASK, m);
		from = at;
	}
	if ((q = strchr(at ? at : auth, '?')) == NULL) {
		fputs(from, m);
		return;
	}
	fwrite(from, 1, (size_t)(q + 1 - from), m);
	config_mask_query(q + 1, m);
}

/*
 * Returns a copy of database_url s (conninfo 1) or of another URL (0:
 * receiver_url, redis_url, any scheme with "://"), to be freed, with
 * passwords replaced by CONFIG_MASK; NULL if memory ran out.  Text that
 * is neither a URI nor a conninfo is masked whole if it mentions a
 * password.
 */
static char *
config_mask(const char *s, int conninfo)
{
	char *out = NULL;
	size_t len;
	FILE *m;
	int bad;

	if ((m = open_memstream(&out, &len)) == NULL)
		return NULL;
	if (!conninfo || config_is_uri(s))
		config_mask_uri(s, m);
	else if (config_mask_conninfo(s, NULL) == 0)
		config_mask_conninfo(s, m);
	else
		fputs(strstr(s, "password") ? CONFIG_MASK : s, m);
	bad = ferror(m);
	if (fclose(m) != 0 || bad) {
		free(out);
		return NULL;
	}
	return out;
}

/*
 * Whether a key holds a secret as a whole: its name ends in "_secret",
 * "_token" or "_password" (receiver_secret and the like).
 */
static int
config_key_secret(const char *name)
{
	static const char *const ends[] = {"_secret", "_token", "_password"};
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		if (n > strlen(ends[i]) &&
		    strcmp(name + n - strlen(ends[i]), ends[i]) == 0)
			return 1;
	return 0;
}

/*
 * Prints one string setting, quoted if parsing it unquoted would not give
 * it back: empty, blanks at either end, or a '#' or '"' inside.  A
 * database_url and every URL (receiver_url, redis_url) are printed with
 * their passwords masked, a secret key (config_key_secret()) masked
 * whole.
 */
static void
config_print_string(FILE *fp, const struct config_key *k, const char *v)
{
	char *masked = NULL;
	size_t n;

	if (v == NULL)
		v = "";
	/*
	 * Masking can lengthen a value ("password=" becomes "password=***"):
	 * one that would no longer fit the key's limit is masked whole, so
	 * that the output always parses.
	 */
	if ((k->type == CONFIG_TYPE_SECRET || config_key_secret(k->name)) &&
	    v[0] != '\0')
		v = CONFIG_MASK;
	else if ((k->type == CONFIG_TYPE_CONNINFO || strstr(v, "://")) &&
	    ((masked = config_mask(v, k->type == CONFIG_TYPE_CONNINFO)) ==
	            NULL ||
	        strlen(masked) > (size_t)k->max))
		v = CONFIG_MASK;
	else if (masked != NULL)
		v = masked;
	n = strlen(v);
	fprintf(fp, "%s = ", k->name);
	if (n > 0 && !config_is_blank(v[0]) && !config_is_blank(v[n - 1]) &&
	    strpbrk(v, "#\"") == NULL)
		fputs(v, fp);
	else {
		fputc('"', fp);
		for (const char *p = v; *p != '\0'; p++) {
			if (*p == '"' || *p == '\\')
				fputc('\\', fp);
			fputc(*p, fp);
		}
		fputc('"', fp);
	}
	fputc('\n', fp);
	free(masked);
}

/*
 * Prints the configuration as a file config_parse() reads back to the same
 * settings: a comment line, then one `key = value` line per key in table
 * order.  Passwords in database_url and the other URLs, and secret keys,
 * are printed as "***", as the comment says, so that the output can be
 * shown and pasted safely.
 */
void
config_print(const struct config *cf, FILE *fp)
{
	fprintf(fp,
	    "# cronvisor configuration in effect; passwords and "
	    "credentials are shown as %s\n",
	    CONFIG_MASK);
	for (const struct config_key *k = config_keys;
	     k < config_keys + CONFIG_NKEYS; k++) {
		const void *f = config_cfield(cf, k);

		if (k->type == CONFIG_TYPE_INT)
			fprintf(fp, "%s = %" PRId64 "\n", k->name,
			    *(const int64_t *)f);
		else if (k->type == CONFIG_TYPE_LEVEL)
			fprintf(fp, "%s = %s\n", k->name,
			    log_level_name(*(const enum log_level *)f));
		else
			config_print_string(fp, k, *(char *const *)f);
	}
}

/*
 * Frees the strings cf holds and zero-fills it; it may then be given to
 * config_defaults() or config_load().  Safe on a zero-filled struct.
 */
void
config_clear(struct config *cf)
{
	for (const struct config_key *k = config_keys;
	     k < config_keys + CONFIG_NKEYS; k++)
		if (config_is_string(k))
			free(*(char **)config_field(cf, k));
	memset(cf, 0, sizeof(*cf));
}

/*
 * The start of a daemon's main (cronvisord, cronvisor-api): --help or -h
 * prints usage to stdout, -f FILE names the configuration (*path, which
 * holds the default), -n prints the configuration in effect, -d (only
 * when debug is not NULL) sets *debug.  Then cf gets the defaults, the
 * file (which must exist unless it is the default path) and the
 * environment; a bad one is fatal, logged by the caller's log_init().
 * Returns -1 when the daemon goes on, else the exit status: 0 after
 * --help, -h or -n, 2 after a usage error.
 */
int
config_daemon(int argc, char **argv, void (*usage)(FILE *), struct config *cf,
    const char **path, int *debug)
{
	char err[CV_ERRLEN];
	int c, check = 0;

	if (argc > 1 && strcmp(argv[1], "--help") == 0) {
		usage(stdout); /* the GNU spelling, as cronvisorctl takes it */
		return 0;
	}
	while ((c = getopt(argc, argv, debug ? "df:nh" : "f:nh")) != -1)
		switch (c) {
		case 'd':
			*debug = 1;
			break;
		case 'f':
			*path = optarg;
			break;
		case 'n':
			check = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	config_defaults(cf);
	if (config_load(cf, *path, strcmp(*path, CONFIG_PATH) != 0, err,
	        sizeof(err)) == -1)
		fatalx("%s", err);
	if (check) {
		config_print(cf, stdout);
		return 0;
	}
	return -1;
}
