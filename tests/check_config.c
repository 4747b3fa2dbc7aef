/*
 * check_config.c: tests of common/config.c.  Every key is read from a file
 * and from the environment, every integer key at the boundaries of its
 * range, every error path is checked for its exact message and for leaving
 * the configuration exactly as it was, config_print() output is parsed back,
 * passwords are checked to be masked in both database_url forms, and the
 * packaged packaging/cronvisor.conf must parse to the defaults, both as
 * shipped and with every setting uncommented.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cronvisor.h"
#include "cvtest.h"

#define SRC "cronvisor.conf" /* the source name tests pass to config_parse */

/* Asserts that two configurations hold the same settings. */
static void
assert_config_eq(const struct config *a, const struct config *b)
{
#define STR(f) ck_assert_str_eq(a->f, b->f)
#define INT(f) ck_assert_int_eq(a->f, b->f)
	STR(database_url);
	STR(redis_url);
	STR(redis_key_prefix);
	STR(events_stream);
	INT(events_stream_maxlen);
	INT(events_retention_hours);
	STR(smtp_url);
	STR(smtp_from);
	INT(notify_timeout_seconds);
	STR(receiver_url);
	STR(supervisor_name);
	INT(log_level);
	INT(max_concurrent_runs);
	INT(claim_batch);
	INT(heartbeat_seconds);
	INT(lease_seconds);
	INT(shutdown_grace_seconds);
	INT(kill_grace_seconds);
	INT(output_tail_bytes);
	INT(default_timeout_seconds);
	STR(default_timezone);
	INT(limit_cpu_seconds);
	INT(limit_memory_mb);
	INT(limit_nofile);
	INT(limit_nproc);
	INT(limit_fsize_mb);
	STR(api_listen);
	STR(api_socket_mode);
	STR(api_socket_group);
	INT(api_threads);
	INT(api_max_body_bytes);
	INT(api_io_timeout_seconds);
	STR(metrics_allow);
	STR(metrics_token);
	STR(http_allow_hosts);
	STR(http_deny_hosts);
	INT(http_max_redirects);
	INT(owner_max_running);
	INT(owner_max_schedules);
	INT(owner_max_triggers_per_minute);
	INT(max_timeout_seconds);
#undef STR
#undef INT
}

/* Parses a NUL-terminated text with source SRC. */
static int
parse(struct config *cf, const char *text, char *err)
{
	return config_parse(cf, text, strlen(text), SRC, err, CV_ERRLEN);
}

/* Returns what config_print() writes for cf; the caller frees it. */
static char *
print_config(const struct config *cf)
{
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);

	ck_assert_ptr_nonnull(m);
	config_print(cf, m);
	ck_assert_int_eq(fclose(m), 0);
	return out;
}

/* Writes len bytes to a new file at path. */
static void
write_bytes(const char *path, const char *data, size_t len)
{
	FILE *fp = fopen(path, "w");

	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(data, 1, len, fp), len);
	ck_assert_int_eq(fclose(fp), 0);
}

/* Writes a string to a new file at path. */
static void
write_file(const char *path, const char *text)
{
	write_bytes(path, text, strlen(text));
}

/* Makes a temporary directory in dir (32 bytes) and returns dir. */
static const char *
tmpdir(char *dir)
{
	strcpy(dir, "/tmp/check_config.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	return dir;
}

/* Every key set to something other than its default. */
static const char every_key[] =
    "database_url = host=db.example dbname=cv\n"
    "redis_url = redis://10.0.0.2:6380\n"
    "receiver_url = https://hooks.example/cronvisor\n"
    "supervisor_name = host-a\n"
    "log_level = debug\n"
    "max_concurrent_runs = 2\n"
    "claim_batch = 3\n"
    "heartbeat_seconds = 4\n"
    "lease_seconds = 40\n"
    "shutdown_grace_seconds = 6\n"
    "kill_grace_seconds = 7\n"
    "output_tail_bytes = 8\n"
    "default_timeout_seconds = 9\n"
    "default_timezone = America/New_York\n"
    "limit_cpu_seconds = 10\n"
    "limit_memory_mb = 11\n"
    "limit_nofile = 12\n"
    "limit_nproc = 13\n"
    "limit_fsize_mb = 0\n"
    "api_listen = 127.0.0.1:8080\n"
    "api_socket_mode = 0600\n"
    "api_socket_group = cronvisor\n"
    "api_threads = 16\n"
    "api_max_body_bytes = 2048\n";

/* Asserts that cf holds exactly the settings of every_key. */
static void
assert_every_key(const struct config *cf)
{
	ck_assert_str_eq(cf->database_url, "host=db.example dbname=cv");
	ck_assert_str_eq(cf->redis_url, "redis://10.0.0.2:6380");
	ck_assert_str_eq(cf->receiver_url, "https://hooks.example/cronvisor");
	ck_assert_str_eq(cf->supervisor_name, "host-a");
	ck_assert_int_eq(cf->log_level, LOG_LEVEL_DEBUG);
	ck_assert_int_eq(cf->max_concurrent_runs, 2);
	ck_assert_int_eq(cf->claim_batch, 3);
	ck_assert_int_eq(cf->heartbeat_seconds, 4);
	ck_assert_int_eq(cf->lease_seconds, 40);
	ck_assert_int_eq(cf->shutdown_grace_seconds, 6);
	ck_assert_int_eq(cf->kill_grace_seconds, 7);
	ck_assert_int_eq(cf->output_tail_bytes, 8);
	ck_assert_int_eq(cf->default_timeout_seconds, 9);
	ck_assert_str_eq(cf->default_timezone, "America/New_York");
	ck_assert_int_eq(cf->limit_cpu_seconds, 10);
	ck_assert_int_eq(cf->limit_memory_mb, 11);
	ck_assert_int_eq(cf->limit_nofile, 12);
	ck_assert_int_eq(cf->limit_nproc, 13);
	ck_assert_int_eq(cf->limit_fsize_mb, 0);
	ck_assert_str_eq(cf->api_listen, "127.0.0.1:8080");
	ck_assert_str_eq(cf->api_socket_mode, "0600");
	ck_assert_str_eq(cf->api_socket_group, "cronvisor");
	ck_assert_int_eq(cf->api_threads, 16);
	ck_assert_int_eq(cf->api_max_body_bytes, 2048);
}

START_TEST(test_defaults)
{
	struct config cf;

	config_defaults(&cf);
	ck_assert_str_eq(cf.database_url, "postgresql:///cronvisor");
	ck_assert_str_eq(cf.redis_url, "redis://127.0.0.1:6379");
	ck_assert_str_eq(cf.receiver_url, "");
	ck_assert_str_eq(cf.supervisor_name, "");
	ck_assert_int_eq(cf.log_level, LOG_LEVEL_INFO);
	ck_assert_int_eq(cf.max_concurrent_runs, 64);
	ck_assert_int_eq(cf.claim_batch, 100);
	ck_assert_int_eq(cf.heartbeat_seconds, 5);
	ck_assert_int_eq(cf.lease_seconds, 30);
	ck_assert_int_eq(cf.shutdown_grace_seconds, 30);
	ck_assert_int_eq(cf.kill_grace_seconds, 5);
	ck_assert_int_eq(cf.output_tail_bytes, 16384);
	ck_assert_int_eq(cf.default_timeout_seconds, 600);
	ck_assert_str_eq(cf.default_timezone, "UTC");
	ck_assert_int_eq(cf.limit_cpu_seconds, 600);
	ck_assert_int_eq(cf.limit_memory_mb, 1024);
	ck_assert_int_eq(cf.limit_nofile, 1024);
	ck_assert_int_eq(cf.limit_nproc, 256);
	ck_assert_int_eq(cf.limit_fsize_mb, 1024);
	ck_assert_str_eq(cf.api_listen, "unix:/run/cronvisor/api.sock");
	ck_assert_str_eq(cf.api_socket_mode, "0660");
	ck_assert_str_eq(cf.api_socket_group, "www-data");
	ck_assert_int_eq(cf.api_threads, 8);
	ck_assert_int_eq(cf.api_max_body_bytes, 1048576);
	config_clear(&cf);
	/* config_clear leaves a zero-filled struct, safe to clear again. */
	ck_assert_ptr_null(cf.database_url);
	config_clear(&cf);
}
END_TEST

START_TEST(test_every_key)
{
	struct config cf;
	char err[CV_ERRLEN];

	config_defaults(&cf);
	ck_assert_msg(parse(&cf, every_key, err) == 0, "%s", err);
	assert_every_key(&cf);
	config_clear(&cf);
}
END_TEST

/* The integer keys and their ranges, as the contract states them. */
static const struct int_key {
	const char *name; /* key */
	size_t off;       /* offset of its int64_t in struct config */
	int64_t min;      /* smallest value accepted */
	int64_t max;      /* largest value accepted */
} int_keys[] = {
#define K(f, lo, hi)                                                           \
	{                                                                      \
#f, offsetof(struct config, f), lo, hi                         \
	}
    K(max_concurrent_runs, 1, 100000),
    K(claim_batch, 1, 10000),
    K(heartbeat_seconds, 1, 3600),
    K(lease_seconds, 2, 86400),
    K(shutdown_grace_seconds, 0, 86400),
    K(kill_grace_seconds, 0, 3600),
    K(output_tail_bytes, 0, RESULT_OUTPUT_MAX),
    K(default_timeout_seconds, 1, 31536000),
    K(limit_cpu_seconds, 0, 31536000),
    K(limit_memory_mb, 0, 4194304),
    K(limit_nofile, 0, 1048576),
    K(limit_nproc, 0, 4194304),
    K(limit_fsize_mb, 0, 16777216),
    K(api_threads, 1, 1024),
    K(api_max_body_bytes, 1024, 67108864),
    K(api_io_timeout_seconds, 1, 3600),
    K(http_max_redirects, 0, 20),
    K(owner_max_running, 0, 100000),
    K(owner_max_schedules, 0, 100000000),
    K(owner_max_triggers_per_minute, 0, 1000000),
    K(max_timeout_seconds, 0, 31536000),
#undef K
};
#define NINT_KEYS (int)(sizeof(int_keys) / sizeof(int_keys[0]))

/* Sets key k to v: expects success iff v is in range, else the message. */
static void
check_int(const struct int_key *k, int64_t v)
{
	struct config cf, orig;
	char text[128], want[CV_ERRLEN], err[CV_ERRLEN];
	int ok = v >= k->min && v <= k->max;

	config_defaults(&cf);
	config_defaults(&orig);
	snprintf(text, sizeof(text), "%s = %" PRId64 "\n", k->name, v);
	ck_assert_int_eq(parse(&cf, text, err), ok ? 0 : -1);
	if (ok) {
		ck_assert_int_eq(*(int64_t *)((char *)&cf + k->off), v);
	} else {
		snprintf(want, sizeof(want),
		    SRC ":1: %s: %" PRId64 " is out of range %" PRId64
		        "-%" PRId64,
		    k->name, v, k->min, k->max);
		ck_assert_str_eq(err, want);
		assert_config_eq(&cf, &orig);
	}
	config_clear(&cf);
	config_clear(&orig);
}

START_TEST(test_int_bounds)
{
	const struct int_key *k = &int_keys[_i];
	int64_t vals[] = {k->min - 1, k->min, k->min + 1, k->max - 1, k->max,
	    k->max + 1, INT64_MAX, INT64_MIN};

	for (size_t j = 0; j < sizeof(vals) / sizeof(vals[0]); j++)
		check_int(k, vals[j]);
}
END_TEST

/* Valid texts and what one setting becomes: quoting, blanks, comments. */
static const struct good {
	const char *text;  /* the file */
	const char *key;   /* NULL: compare with the defaults */
	const char *value; /* config_print's rendering of key's value */
} goods[] = {
    {"", NULL, NULL},
    {"\n\n   \n\t\n", NULL, NULL},
    {"# comment\n   # indented comment\n#database_url = x\n", NULL, NULL},
    {"database_url=host=a", "database_url", "host=a"},
    {"  \tdatabase_url\t =\t host=a  port=5  \t", "database_url",
        "host=a  port=5"},
    {"database_url = host=a\r\n", "database_url", "host=a"},
    {"database_url = \"  a # b \\\"c\\\" \\\\d  \"", "database_url",
        "\"  a # b \\\"c\\\" \\\\d  \""},
    {"database_url = \"\"", "database_url", "\"\""},
    {"database_url =", "database_url", "\"\""},
    {"database_url = \"x\"   \t\r", "database_url", "x"},
    {"supervisor_name = a\\b", "supervisor_name", "a\\b"},
    {"supervisor_name = \"a\\\\b\"", "supervisor_name", "a\\b"},
    {"supervisor_name = 'single'", "supervisor_name", "'single'"},
    {"supervisor_name = h\xc3\xb6st", "supervisor_name", "h\xc3\xb6st"},
    {"claim_batch = \"7\"", "claim_batch", "7"},
    {"claim_batch = 007", "claim_batch", "7"},
    {"limit_nofile = -0", "limit_nofile", "0"},
    {"log_level = warn", "log_level", "warn"},
    {"log_level = \"debug\"", "log_level", "debug"},
    {"api_listen = unix:/x", "api_listen", "unix:/x"},
    {"api_listen = [::1]:1", "api_listen", "[::1]:1"},
    {"api_listen = localhost:65535", "api_listen", "localhost:65535"},
    {"api_listen = 127.0.0.1:0080", "api_listen", "127.0.0.1:0080"},
    {"api_socket_mode = 0", "api_socket_mode", "0"},
    {"api_socket_mode = 750", "api_socket_mode", "750"},
    {"api_socket_mode = 0777", "api_socket_mode", "0777"},
    {"api_socket_group =", "api_socket_group", "\"\""},
    {"receiver_url = http://h/a=b", "receiver_url", "http://h/a=b"},
    {"limit_nofile = 5\n# last line without newline", "limit_nofile", "5"},
};

/* Returns the value part of key's line in config_print() output. */
static char *
printed_value(const char *out, const char *key)
{
	char pat[64];
	const char *p;
	size_t n;

	snprintf(pat, sizeof(pat), "\n%s = ", key);
	p = strstr(out, pat);
	ck_assert_msg(p != NULL, "%s not printed", key);
	p += strlen(pat);
	n = strcspn(p, "\n");
	return strndup(p, n);
}

START_TEST(test_good)
{
	const struct good *g = &goods[_i];
	struct config cf, def;
	char err[CV_ERRLEN], *out, *v;

	config_defaults(&cf);
	config_defaults(&def);
	ck_assert_msg(parse(&cf, g->text, err) == 0, "%s", err);
	if (g->key == NULL || g->value == NULL) {
		assert_config_eq(&cf, &def);
	} else {
		out = print_config(&cf);
		v = printed_value(out, g->key);
		ck_assert_str_eq(v, g->value);
		free(v);
		free(out);
	}
	config_clear(&cf);
	config_clear(&def);
}
END_TEST

START_TEST(test_quoted_values)
{
	struct config cf;
	char err[CV_ERRLEN];

	config_defaults(&cf);
	ck_assert(parse(&cf,
	              "database_url = \"  a # b \\\"c\\\" \\\\d  \"\n"
	              "receiver_url = \"\"\n"
	              "supervisor_name = \"=\\\\\"\n",
	              err) == 0);
	ck_assert_str_eq(cf.database_url, "  a # b \"c\" \\d  ");
	ck_assert_str_eq(cf.receiver_url, "");
	ck_assert_str_eq(cf.supervisor_name, "=\\");
	config_clear(&cf);
}
END_TEST

/* Bad texts and the exact message each must give. */
static const struct bad {
	const char *text; /* the file */
	size_t len;       /* its length; 0: strlen */
	const char *msg;  /* the message wanted */
} bads[] = {
    {"foo = 1", 0, SRC ":1: unknown key \"foo\""},
    {"\n# c\n\nDatabase_url = x", 0, SRC ":4: unknown key \"Database_url\""},
    {"fo\"o\x01\x80 = 1", 0, SRC ":1: unknown key \"fo\\\"o\\x01\\x80\""},
    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa = 1", 0,
        SRC ":1: unknown key \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\""},
    {"database_url", 0, SRC ":1: expected key = value"},
    {"claim_batch 5\n", 0, SRC ":1: expected key = value"},
    {"= 5", 0, SRC ":1: expected key = value"},
    {"  \t= 5", 0, SRC ":1: expected key = value"},
    {"claim_batch = 1\n\n# x\nclaim_batch = 2", 0,
        SRC ":4: claim_batch is set twice (first on line 1)"},
    {"log_level = info\r\nlog_level = oops", 0,
        SRC ":2: log_level is set twice (first on line 1)"},
    {"\n\n\n\n\n\nlog_level = loud", 0,
        SRC ":7: log_level: \"loud\" is not one of warn, info, debug"},
    {"log_level = INFO", 0,
        SRC ":1: log_level: \"INFO\" is not one of warn, info, debug"},
    {"log_level =", 0,
        SRC ":1: log_level: \"\" is not one of warn, info, debug"},
    {"claim_batch = 0", 0, SRC ":1: claim_batch: 0 is out of range 1-10000"},
    {"claim_batch = -1", 0, SRC ":1: claim_batch: -1 is out of range 1-10000"},
    {"claim_batch = 9223372036854775808", 0,
        SRC ":1: claim_batch: 9223372036854775808 is out of range 1-10000"},
    {"claim_batch = -9223372036854775809", 0,
        SRC ":1: claim_batch: -9223372036854775809 is out of range 1-10000"},
    {"claim_batch = 1234567890123456789012345678901234567890", 0,
        SRC ":1: claim_batch: 123456789012345678901234... is out of range "
            "1-10000"},
    {"claim_batch = 12a", 0,
        SRC ":1: claim_batch: \"12a\" is not a decimal integer"},
    {"claim_batch = 0x10", 0,
        SRC ":1: claim_batch: \"0x10\" is not a decimal integer"},
    {"claim_batch = +5", 0,
        SRC ":1: claim_batch: \"+5\" is not a decimal integer"},
    {"claim_batch = 1.5", 0,
        SRC ":1: claim_batch: \"1.5\" is not a decimal integer"},
    {"claim_batch = 1 2", 0,
        SRC ":1: claim_batch: \"1 2\" is not a decimal integer"},
    {"claim_batch = \" 5\"", 0,
        SRC ":1: claim_batch: \" 5\" is not a decimal integer"},
    {"claim_batch = -", 0,
        SRC ":1: claim_batch: \"-\" is not a decimal integer"},
    {"claim_batch = --1", 0,
        SRC ":1: claim_batch: \"--1\" is not a decimal integer"},
    {"claim_batch =", 0, SRC ":1: claim_batch: \"\" is not a decimal integer"},
    {"database_url = \"abc", 0,
        SRC ":1: database_url: unterminated quoted value"},
    {"database_url = \"abc\\\"", 0,
        SRC ":1: database_url: unterminated quoted value"},
    {"database_url = \"abc\\", 0,
        SRC ":1: database_url: unterminated quoted value"},
    {"database_url = \"", 0, SRC ":1: database_url: unterminated quoted value"},
    {"database_url = \"a\\nb\"", 0,
        SRC ":1: database_url: bad escape in quoted value (only \\\" and \\\\ "
            "are allowed)"},
    {"database_url = \"abc\" x", 0,
        SRC ":1: database_url: text after the closing quote"},
    {"database_url = \"abc\"\"", 0,
        SRC ":1: database_url: text after the closing quote"},
    {"database_url = a # comment", 0,
        SRC ":1: database_url: unquoted value contains '#': quote the value "
            "(comments take a whole line)"},
    {"database_url = a\"b", 0,
        SRC ":1: database_url: unquoted value contains '\"': quote the value"},
    {"# ok\nclaim_batch = 1\0 junk\n", 24, SRC ":2: NUL byte in line"},
    {"\0", 1, SRC ":1: NUL byte in line"},
    {"supervisor_name = a\tb", 0,
        SRC ":1: supervisor_name: control character in value"},
    {"supervisor_name = \"a\x7f\"", 0,
        SRC ":1: supervisor_name: control character in value"},
    {"supervisor_name = \"a\rb\"", 0,
        SRC ":1: supervisor_name: control character in value"},
    {"api_listen = 0.0.0.0:8080", 0,
        SRC ":1: api_listen: \"0.0.0.0:8080\" is not unix:/PATH, "
            "127.0.0.1:PORT, [::1]:PORT or localhost:PORT"},
    {"api_listen = unix:run/x.sock", 0,
        SRC ":1: api_listen: \"unix:run/x.sock\" is not unix:/PATH, "
            "127.0.0.1:PORT, [::1]:PORT or localhost:PORT"},
    {"api_listen = ::1:80", 0,
        SRC ":1: api_listen: \"::1:80\" is not unix:/PATH, "
            "127.0.0.1:PORT, [::1]:PORT or localhost:PORT"},
    {"api_listen = localhost", 0,
        SRC ":1: api_listen: \"localhost\" is not unix:/PATH, "
            "127.0.0.1:PORT, [::1]:PORT or localhost:PORT"},
    {"api_listen = 127.0.0.1:0", 0,
        SRC ":1: api_listen: port 0 is out of range 1-65535"},
    {"api_listen = [::1]:65536", 0,
        SRC ":1: api_listen: port 65536 is out of range 1-65535"},
    {"api_listen = localhost:", 0,
        SRC ":1: api_listen: port \"\" is not a decimal integer"},
    {"api_listen = localhost:http", 0,
        SRC ":1: api_listen: port \"http\" is not a decimal integer"},
    {"api_socket_mode = 0999", 0,
        SRC ":1: api_socket_mode: \"0999\" is not an octal mode 0000-0777"},
    {"api_socket_mode = 1777", 0,
        SRC ":1: api_socket_mode: \"1777\" is not an octal mode 0000-0777"},
    {"api_socket_mode = 00660", 0,
        SRC ":1: api_socket_mode: \"00660\" is not an octal mode 0000-0777"},
    {"api_socket_mode = rw", 0,
        SRC ":1: api_socket_mode: \"rw\" is not an octal mode 0000-0777"},
    {"api_socket_mode =", 0,
        SRC ":1: api_socket_mode: \"\" is not an octal mode 0000-0777"},
    {"default_timezone = Mars/Olympus_Mons", 0,
        SRC ":1: default_timezone: unknown time zone \"Mars/Olympus_Mons\""},
    {"default_timezone = ../etc/passwd", 0,
        SRC ":1: default_timezone: invalid time zone name \"../etc/passwd\""},
    {"api_socket_mode = -660", 0,
        SRC ":1: api_socket_mode: \"-660\" is not an octal mode 0000-0777"},
};

/*
 * The configuration a bad text is applied to: not the defaults, so that
 * "unchanged" is not the same as "reset to the defaults".
 */
static const char base[] = "database_url = host=base\n"
                           "claim_batch = 7\n"
                           "log_level = debug\n"
                           "api_listen = localhost:99\n";

START_TEST(test_bad)
{
	const struct bad *b = &bads[_i];
	struct config cf, orig;
	char err[CV_ERRLEN];
	size_t len = b->len ? b->len : strlen(b->text);

	config_defaults(&cf);
	config_defaults(&orig);
	ck_assert(parse(&cf, base, err) == 0);
	ck_assert(parse(&orig, base, err) == 0);
	/* Good lines before the bad one must not be applied either. */
	ck_assert_int_eq(
	    config_parse(&cf, b->text, len, SRC, err, sizeof(err)), -1);
	ck_assert_str_eq(err, b->msg);
	assert_config_eq(&cf, &orig);
	config_clear(&cf);
	config_clear(&orig);
}
END_TEST

/* A line of n bytes: a comment, or a value for supervisor_name. */
static char *
long_line(const char *head, size_t n, char fill)
{
	char *s = malloc(n + 2);
	size_t h = strlen(head);

	ck_assert_ptr_nonnull(s);
	memcpy(s, head, h);
	memset(s + h, fill, n - h);
	s[n] = '\n';
	s[n + 1] = '\0';
	return s;
}

START_TEST(test_line_length)
{
	struct config cf, def;
	char err[CV_ERRLEN], *s;

	config_defaults(&cf);
	config_defaults(&def);
	s = long_line("#", 4096, 'x');
	ck_assert_msg(parse(&cf, s, err) == 0, "%s", err);
	free(s);
	s = long_line("#", 4097, 'x');
	ck_assert_int_eq(parse(&cf, s, err), -1);
	ck_assert_str_eq(err, SRC ":1: line is longer than 4096 bytes");
	free(s);
	/* The limit counts the bytes before '\n', '\r' included. */
	s = long_line("#", 4097, 'x');
	s[4096] = '\r';
	ck_assert_int_eq(parse(&cf, s, err), -1);
	free(s);
	assert_config_eq(&cf, &def);
	config_clear(&cf);
	config_clear(&def);
}
END_TEST

START_TEST(test_string_length)
{
	struct config cf;
	char err[CV_ERRLEN], *s;

	config_defaults(&cf);
	s = long_line("supervisor_name = ", 18 + 255, 'h');
	ck_assert_msg(parse(&cf, s, err) == 0, "%s", err);
	ck_assert_uint_eq(strlen(cf.supervisor_name), 255);
	free(s);
	s = long_line("supervisor_name = ", 18 + 256, 'h');
	ck_assert_int_eq(parse(&cf, s, err), -1);
	ck_assert_str_eq(err, SRC ":1: supervisor_name: longer than 255 bytes");
	free(s);
	s = long_line("database_url = ", 15 + 2048, 'd');
	ck_assert_msg(parse(&cf, s, err) == 0, "%s", err);
	free(s);
	s = long_line("database_url = ", 15 + 2049, 'd');
	ck_assert_int_eq(parse(&cf, s, err), -1);
	ck_assert_str_eq(err, SRC ":1: database_url: longer than 2048 bytes");
	free(s);
	/* sun_path holds 107 bytes and a NUL. */
	s = long_line("api_listen = unix:/", 19 + 106, 's');
	ck_assert_msg(parse(&cf, s, err) == 0, "%s", err);
	free(s);
	s = long_line("api_listen = unix:/", 19 + 107, 's');
	ck_assert_int_eq(parse(&cf, s, err), -1);
	ck_assert_str_eq(
	    err, SRC ":1: api_listen: socket path is longer than 107 bytes");
	free(s);
	config_clear(&cf);
}
END_TEST

/* Each call parses its own text: a key may appear once per text. */
START_TEST(test_parse_layers)
{
	struct config cf;
	char err[CV_ERRLEN];

	config_defaults(&cf);
	ck_assert(parse(&cf, "claim_batch = 5\n", err) == 0);
	ck_assert(parse(&cf, "claim_batch = 6\nlog_level = warn", err) == 0);
	ck_assert_int_eq(cf.claim_batch, 6);
	ck_assert_int_eq(cf.log_level, LOG_LEVEL_WARN);
	ck_assert(config_parse(&cf, "x = 1", 5, "/etc/other.conf", err,
	              sizeof(err)) == -1);
	ck_assert_str_eq(err, "/etc/other.conf:1: unknown key \"x\"");
	/* A short buffer truncates the message, NUL-terminated. */
	ck_assert(config_parse(&cf, "x = 1", 5, SRC, err, 8) == -1);
	ck_assert_str_eq(err, "cronvis");
	/* len bounds the text: what follows is not read. */
	ck_assert(config_parse(
	              &cf, "claim_batch = 12", 15, SRC, err, sizeof(err)) == 0);
	ck_assert_int_eq(cf.claim_batch, 1);
	config_clear(&cf);
}
END_TEST

/* The environment variable of every key, with the value of every_key. */
static const char *const every_env[][2] = {
    {"CRONVISOR_DATABASE_URL", "host=db.example dbname=cv"},
    {"CRONVISOR_REDIS_URL", "redis://10.0.0.2:6380"},
    {"CRONVISOR_RECEIVER_URL", "https://hooks.example/cronvisor"},
    {"CRONVISOR_SUPERVISOR_NAME", "host-a"},
    {"CRONVISOR_LOG_LEVEL", "debug"},
    {"CRONVISOR_MAX_CONCURRENT_RUNS", "2"},
    {"CRONVISOR_CLAIM_BATCH", "3"},
    {"CRONVISOR_HEARTBEAT_SECONDS", "4"},
    {"CRONVISOR_LEASE_SECONDS", "40"},
    {"CRONVISOR_SHUTDOWN_GRACE_SECONDS", "6"},
    {"CRONVISOR_KILL_GRACE_SECONDS", "7"},
    {"CRONVISOR_OUTPUT_TAIL_BYTES", "8"},
    {"CRONVISOR_DEFAULT_TIMEOUT_SECONDS", "9"},
    {"CRONVISOR_DEFAULT_TIMEZONE", "America/New_York"},
    {"CRONVISOR_LIMIT_CPU_SECONDS", "10"},
    {"CRONVISOR_LIMIT_MEMORY_MB", "11"},
    {"CRONVISOR_LIMIT_NOFILE", "12"},
    {"CRONVISOR_LIMIT_NPROC", "13"},
    {"CRONVISOR_LIMIT_FSIZE_MB", "0"},
    {"CRONVISOR_API_LISTEN", "127.0.0.1:8080"},
    {"CRONVISOR_API_SOCKET_MODE", "0600"},
    {"CRONVISOR_API_SOCKET_GROUP", "cronvisor"},
    {"CRONVISOR_API_THREADS", "16"},
    {"CRONVISOR_API_MAX_BODY_BYTES", "2048"},
};

START_TEST(test_env_every_key)
{
	struct config cf;
	char err[CV_ERRLEN];

	for (size_t i = 0; i < sizeof(every_env) / sizeof(every_env[0]); i++)
		ck_assert(setenv(every_env[i][0], every_env[i][1], 1) == 0);
	ck_assert(setenv("CRONVISOR_NOT_A_KEY", "ignored", 1) == 0);
	config_defaults(&cf);
	ck_assert_msg(config_env(&cf, err, sizeof(err)) == 0, "%s", err);
	assert_every_key(&cf);
	config_clear(&cf);
}
END_TEST

START_TEST(test_env_literal)
{
	struct config cf;
	char err[CV_ERRLEN];

	/* Values are taken as they are: no trimming, no quotes, "" is "". */
	setenv("CRONVISOR_SUPERVISOR_NAME", "  \"x # y\"  ", 1);
	setenv("CRONVISOR_RECEIVER_URL", "", 1);
	setenv("CRONVISOR_REDIS_URL", "", 1);
	config_defaults(&cf);
	ck_assert(parse(&cf, "receiver_url = http://r/\n", err) == 0);
	ck_assert_msg(config_env(&cf, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(cf.supervisor_name, "  \"x # y\"  ");
	ck_assert_str_eq(cf.receiver_url, "");
	ck_assert_str_eq(cf.redis_url, "");
	config_clear(&cf);
}
END_TEST

static const char *const env_bads[][3] = {
    {"CRONVISOR_LOG_LEVEL", "x",
        "environment CRONVISOR_LOG_LEVEL: \"x\" is not one of warn, info, "
        "debug"},
    {"CRONVISOR_CLAIM_BATCH", "0",
        "environment CRONVISOR_CLAIM_BATCH: 0 is out of range 1-10000"},
    {"CRONVISOR_CLAIM_BATCH", " 5",
        "environment CRONVISOR_CLAIM_BATCH: \" 5\" is not a decimal integer"},
    {"CRONVISOR_API_THREADS", "",
        "environment CRONVISOR_API_THREADS: \"\" is not a decimal integer"},
    {"CRONVISOR_API_LISTEN", "*:80",
        "environment CRONVISOR_API_LISTEN: \"*:80\" is not unix:/PATH, "
        "127.0.0.1:PORT, [::1]:PORT or localhost:PORT"},
    {"CRONVISOR_API_SOCKET_MODE", "8",
        "environment CRONVISOR_API_SOCKET_MODE: \"8\" is not an octal mode "
        "0000-0777"},
    {"CRONVISOR_DATABASE_URL", "host=a\nhost=b",
        "environment CRONVISOR_DATABASE_URL: control character in value"},
};

START_TEST(test_env_bad)
{
	struct config cf, orig;
	char err[CV_ERRLEN];

	/* A good override earlier in the table must not be applied alone. */
	setenv("CRONVISOR_DATABASE_URL", "host=env", 1);
	setenv(env_bads[_i][0], env_bads[_i][1], 1);
	config_defaults(&cf);
	config_defaults(&orig);
	ck_assert(parse(&cf, base, err) == 0);
	ck_assert(parse(&orig, base, err) == 0);
	ck_assert_int_eq(config_env(&cf, err, sizeof(err)), -1);
	ck_assert_str_eq(err, env_bads[_i][2]);
	assert_config_eq(&cf, &orig);
	config_clear(&cf);
	config_clear(&orig);
}
END_TEST

START_TEST(test_load_missing)
{
	struct config cf, def;
	char err[CV_ERRLEN];

	memset(&cf, 0, sizeof(cf)); /* config_load takes a zero-filled struct */
	config_defaults(&def);
	ck_assert_msg(config_load(&cf, "/nonexistent/cronvisor.conf", 0, err,
	                  sizeof(err)) == 0,
	    "%s", err);
	assert_config_eq(&cf, &def);
	/* With must_exist the error leaves cf as it was. */
	cf.claim_batch = 3;
	ck_assert_int_eq(config_load(&cf, "/nonexistent/cronvisor.conf", 1, err,
	                     sizeof(err)),
	    -1);
	ck_assert_str_eq(err,
	    "cannot read /nonexistent/cronvisor.conf: No "
	    "such file or directory");
	ck_assert_int_eq(cf.claim_batch, 3);
	ck_assert_str_eq(cf.database_url, def.database_url);
	config_clear(&cf);
	config_clear(&def);
}
END_TEST

START_TEST(test_load_file)
{
	struct config cf;
	char err[CV_ERRLEN], path[256], want[CV_ERRLEN + 256];
	char dirbuf[32];
	const char *dir = tmpdir(dirbuf);

	snprintf(path, sizeof(path), "%s/cronvisor.conf", dir);
	write_file(path, every_key);
	config_defaults(&cf);
	ck_assert_msg(
	    config_load(&cf, path, 1, err, sizeof(err)) == 0, "%s", err);
	assert_every_key(&cf);
	/* A bad file names itself by its path and changes nothing. */
	write_file(path, "claim_batch = 1\n\nnope = 1\n");
	ck_assert_int_eq(config_load(&cf, path, 1, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s:3: unknown key \"nope\"", path);
	ck_assert_str_eq(err, want);
	assert_every_key(&cf);
	/* A directory is refused. */
	ck_assert_int_eq(config_load(&cf, dir, 0, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "cannot read %s: not a regular file", dir);
	ck_assert_str_eq(err, want);
	assert_every_key(&cf);
	unlink(path);
	rmdir(dir);
	config_clear(&cf);
}
END_TEST

START_TEST(test_load_size)
{
	struct config cf, def;
	char err[CV_ERRLEN], path[256], want[CV_ERRLEN + 256];
	char dirbuf[32];
	const char *dir = tmpdir(dirbuf);
	size_t max = 1024 * 1024;
	char *big = malloc(max + 1);

	ck_assert_ptr_nonnull(big);
	/* Comment lines of 1024 bytes, '\n' included. */
	for (size_t i = 0; i < max + 1; i++)
		big[i] = i % 1024 == 1023 ? '\n' : i % 1024 == 0 ? '#' : 'c';
	snprintf(path, sizeof(path), "%s/big.conf", dir);
	write_bytes(path, big, max);
	config_defaults(&cf);
	config_defaults(&def);
	ck_assert_msg(
	    config_load(&cf, path, 1, err, sizeof(err)) == 0, "%s", err);
	write_bytes(path, big, max + 1);
	ck_assert_int_eq(config_load(&cf, path, 1, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "cannot read %s: larger than 1 MiB", path);
	ck_assert_str_eq(err, want);
	assert_config_eq(&cf, &def);
	free(big);
	unlink(path);
	rmdir(dir);
	config_clear(&cf);
	config_clear(&def);
}
END_TEST

START_TEST(test_load_env)
{
	struct config cf;
	char err[CV_ERRLEN], path[256];
	char dirbuf[32];
	const char *dir = tmpdir(dirbuf);

	snprintf(path, sizeof(path), "%s/cronvisor.conf", dir);
	write_file(path, "claim_batch = 5\nlog_level = warn\n");
	setenv("CRONVISOR_CLAIM_BATCH", "6", 1);
	config_defaults(&cf);
	ck_assert_msg(
	    config_load(&cf, path, 1, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(cf.claim_batch, 6);
	ck_assert_int_eq(cf.log_level, LOG_LEVEL_WARN);
	setenv("CRONVISOR_LOG_LEVEL", "x", 1);
	ck_assert_int_eq(config_load(&cf, path, 1, err, sizeof(err)), -1);
	ck_assert_str_eq(err,
	    "environment CRONVISOR_LOG_LEVEL: \"x\" is not "
	    "one of warn, info, debug");
	ck_assert_int_eq(cf.claim_batch, 6);
	unlink(path);
	rmdir(dir);
	config_clear(&cf);
}
END_TEST

/* lease_seconds > heartbeat_seconds, checked once file and env are in. */
START_TEST(test_load_cross)
{
	struct config cf;
	char err[CV_ERRLEN], path[256];
	char dirbuf[32];
	const char *dir = tmpdir(dirbuf);

	snprintf(path, sizeof(path), "%s/cronvisor.conf", dir);
	config_defaults(&cf);
	write_file(path, "heartbeat_seconds = 30\n");
	ck_assert_int_eq(config_load(&cf, path, 1, err, sizeof(err)), -1);
	ck_assert_str_eq(err,
	    "lease_seconds (30) must be greater than "
	    "heartbeat_seconds (30)");
	ck_assert_int_eq(cf.heartbeat_seconds, 5);
	write_file(path, "heartbeat_seconds = 29\n");
	ck_assert_msg(
	    config_load(&cf, path, 1, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(cf.heartbeat_seconds, 29);
	/* The file alone would fail; the environment mends it. */
	write_file(path, "heartbeat_seconds = 60\n");
	setenv("CRONVISOR_LEASE_SECONDS", "120", 1);
	ck_assert_msg(
	    config_load(&cf, path, 1, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(cf.lease_seconds, 120);
	/* And the environment can break a good file. */
	write_file(path, "lease_seconds = 10\n");
	unsetenv("CRONVISOR_LEASE_SECONDS");
	setenv("CRONVISOR_HEARTBEAT_SECONDS", "10", 1);
	ck_assert_int_eq(config_load(&cf, path, 1, err, sizeof(err)), -1);
	ck_assert_str_eq(err,
	    "lease_seconds (10) must be greater than "
	    "heartbeat_seconds (10)");
	ck_assert_int_eq(cf.lease_seconds, 120);
	unlink(path);
	rmdir(dir);
	config_clear(&cf);
}
END_TEST

static const char default_print[] =
    "# cronvisor configuration in effect; passwords and credentials are "
    "shown as ***\n"
    "database_url = postgresql:///cronvisor\n"
    "db_timeout_ms = 10000\n"
    "redis_url = redis://127.0.0.1:6379\n"
    "redis_key_prefix = cronvisor:\n"
    "events_stream = \"\"\n"
    "events_stream_maxlen = 100000\n"
    "events_retention_hours = 168\n"
    "smtp_url = \"\"\n"
    "smtp_from = cronvisor@localhost\n"
    "notify_timeout_seconds = 10\n"
    "receiver_url = \"\"\n"
    "receiver_secret = \"\"\n"
    "agent_callback_url = \"\"\n"
    "max_concurrent_requests = 50\n"
    "datasource_role = cronvisor_reader\n"
    "datasource_row_limit = 100000\n"
    "datasource_timeout_ms = 5000\n"
    "fanout_batch_size = 10\n"
    "fanout_stagger_ms = 1000\n"
    "supervisor_name = \"\"\n"
    "log_level = info\n"
    "max_concurrent_runs = 64\n"
    "claim_batch = 100\n"
    "claim_ahead_ms = 50\n"
    "heartbeat_seconds = 5\n"
    "lease_seconds = 30\n"
    "shutdown_grace_seconds = 30\n"
    "kill_grace_seconds = 5\n"
    "output_tail_bytes = 16384\n"
    "default_timeout_seconds = 600\n"
    "default_timezone = UTC\n"
    "limit_cpu_seconds = 600\n"
    "limit_memory_mb = 1024\n"
    "limit_nofile = 1024\n"
    "limit_nproc = 256\n"
    "limit_fsize_mb = 1024\n"
    "api_listen = unix:/run/cronvisor/api.sock\n"
    "api_socket_mode = 0660\n"
    "api_socket_group = www-data\n"
    "api_threads = 8\n"
    "api_max_body_bytes = 1048576\n"
    "api_io_timeout_seconds = 10\n"
    "metrics_allow = 127.0.0.0/8,::1\n"
    "metrics_token = \"\"\n"
    "http_allow_hosts = \"\"\n"
    "http_deny_hosts = "
    "169.254.0.0/16,fe80::/10,fd00:ec2::254,100.100.100.200,0.0.0.0/8,::\n"
    "http_max_redirects = 0\n"
    "run_users = \"\"\n"
    "run_user_default = cronvisor-run\n"
    "owner_max_running = 0\n"
    "owner_max_schedules = 10000\n"
    "owner_max_triggers_per_minute = 60\n"
    "max_timeout_seconds = 86400\n";

START_TEST(test_print_defaults)
{
	struct config cf;
	char *out;

	config_defaults(&cf);
	out = print_config(&cf);
	ck_assert_str_eq(out, default_print);
	free(out);
	config_clear(&cf);
}
END_TEST

/* Settings that each need some care to print back. */
static const char *const roundtrips[] = {
    every_key,
    "",
    "database_url = \"host=db application_name='a # b'\"\n"
    "redis_url = \" lead\"\n"
    "receiver_url = \"trail \"\n"
    "supervisor_name = \"q\\\"uote\\\\back\"\n"
    "api_socket_group = \"\"\n",
    "supervisor_name = a\\b=c'd\n"
    "redis_url = \\\\\n"
    "api_listen = [::1]:65535\n"
    "api_socket_mode = 7\n"
    "log_level = warn\n",
};

START_TEST(test_print_roundtrip)
{
	struct config cf, back;
	char err[CV_ERRLEN], *out;

	config_defaults(&cf);
	config_defaults(&back);
	ck_assert_msg(parse(&cf, roundtrips[_i], err) == 0, "%s", err);
	out = print_config(&cf);
	ck_assert_msg(parse(&back, out, err) == 0, "%s\n%s", err, out);
	assert_config_eq(&cf, &back);
	free(out);
	config_clear(&cf);
	config_clear(&back);
}
END_TEST

/* Round trip of values only the environment can give. */
START_TEST(test_print_roundtrip_env)
{
	struct config cf, back;
	char err[CV_ERRLEN], *out;

	setenv("CRONVISOR_SUPERVISOR_NAME", "\"#\\ x ", 1);
	setenv("CRONVISOR_REDIS_URL", " ", 1);
	config_defaults(&cf);
	config_defaults(&back);
	ck_assert(config_env(&cf, err, sizeof(err)) == 0);
	out = print_config(&cf);
	ck_assert_msg(parse(&back, out, err) == 0, "%s\n%s", err, out);
	assert_config_eq(&cf, &back);
	ck_assert_str_eq(back.supervisor_name, "\"#\\ x ");
	free(out);
	config_clear(&cf);
	config_clear(&back);
}
END_TEST

/* database_url values and how config_print must show them. */
static const char *const masks[][2] = {
    {"host=db password=secret user=x", "host=db password=*** user=x"},
    {"password=secret", "password=***"},
    {"host=db password = 'se cret\\' x' user=x",
        "host=db password = *** user=x"},
    {"host=db password=sec\\ ret user=x", "host=db password=*** user=x"},
    {"password=secret sslpassword=secret2", "password=*** sslpassword=***"},
    {"password='secret'port=5", "password=*** port=5"},
    /* libpq skips blanks after '=': the password is "user=x". */
    {"password= user=x", "password= ***"},
    {"password='' user=x", "password=*** user=x"},
    {"dbname=postgresql://u:secret@h/db", "dbname=***"},
    {"dbname='user=u password=secret'", "dbname=***"},
    {"dbname=cv user=password", "dbname=cv user=password"},
    {"host=db user=x", "host=db user=x"},
    {"host=db password", "***"},
    {"host=db password='secret", "***"},
    {"postgresql://u:secret@h:5432/db?sslmode=require",
        "postgresql://u:***@h:5432/db?sslmode=require"},
    {"postgres://u:secret@h/db", "postgres://u:***@h/db"},
    {"postgresql://u:@h/db", "postgresql://u:***@h/db"},
    {"postgresql://u:sec/r?et@h/db", "postgresql://u:***@h/db"},
    {"postgresql://u:s@cret@h/db", "postgresql://u:***@h/db"},
    {"postgresql://u@h/db?password=secret&sslpassword=secret2&x=y",
        "postgresql://u@h/db?password=***&sslpassword=***&x=y"},
    {"postgresql://h/db?application_name=a&password=secret",
        "postgresql://h/db?application_name=a&password=***"},
    {"postgresql://u@h/db", "postgresql://u@h/db"},
    {"postgresql:///cronvisor", "postgresql:///cronvisor"},
    {"postgresql://", "postgresql://"},
    {"postgresql://h:5432,h2:5433/db", "postgresql://h:5432,h2:5433/db"},
};

START_TEST(test_print_mask)
{
	struct config cf;
	char *out, *v;

	ck_assert(setenv("CRONVISOR_DATABASE_URL", masks[_i][0], 1) == 0);
	config_defaults(&cf);
	ck_assert(config_env(&cf, NULL, 0) == 0);
	out = print_config(&cf);
	ck_assert_msg(strncmp(out, "# ", 2) == 0 && strstr(out, "***") != NULL,
	    "no masking note: %s", out);
	v = printed_value(out, "database_url");
	ck_assert_str_eq(v, masks[_i][1]);
	/* The one "secret" printed is the key name receiver_secret. */
	ck_assert_msg(strstr(strstr(out, "secret") + 1, "secret") == NULL &&
	        strstr(out, "receiver_secret = \"\"\n") != NULL,
	    "leak: %s", out);
	free(v);
	free(out);
	config_clear(&cf);
}
END_TEST

/* The other URLs: the password of their userinfo and query, no more. */
static const char *const url_masks[][3] = {
    {"CRONVISOR_REDIS_URL", "redis://:hunter2@127.0.0.1:6379/0",
        "redis://:***@127.0.0.1:6379/0"},
    {"CRONVISOR_REDIS_URL", "rediss://user:hunter2@r.example:6380",
        "rediss://user:***@r.example:6380"},
    {"CRONVISOR_REDIS_URL", "redis://127.0.0.1:6379", "redis://127.0.0.1:6379"},
    {"CRONVISOR_RECEIVER_URL", "https://hook:hunter2@rcv.example/in?x=1",
        "https://hook:***@rcv.example/in?x=1"},
    {"CRONVISOR_RECEIVER_URL", "http://rcv.example/in?password=hunter2&a=b",
        "http://rcv.example/in?password=***&a=b"},
    {"CRONVISOR_RECEIVER_URL", "http://u@rcv.example/",
        "http://u@rcv.example/"},
};

START_TEST(test_print_mask_urls)
{
	struct config cf;
	char *out, *v;
	const char *key = strcmp(url_masks[_i][0], "CRONVISOR_REDIS_URL") == 0
	    ? "redis_url"
	    : "receiver_url";

	ck_assert(setenv(url_masks[_i][0], url_masks[_i][1], 1) == 0);
	config_defaults(&cf);
	ck_assert(config_env(&cf, NULL, 0) == 0);
	out = print_config(&cf);
	v = printed_value(out, key);
	ck_assert_str_eq(v, url_masks[_i][2]);
	ck_assert_msg(strstr(out, "hunter2") == NULL, "leak: %s", out);
	free(v);
	free(out);
	config_clear(&cf);
	unsetenv(url_masks[_i][0]);
}
END_TEST

/* A value masking would push past 2048 bytes is masked whole. */
START_TEST(test_print_mask_long)
{
	struct config cf, back;
	char err[CV_ERRLEN], url[2048 + 1] = "", *out, *v;

	while (strlen(url) + 11 <= 2048)
		strcat(url, "password=a ");
	setenv("CRONVISOR_DATABASE_URL", url, 1);
	config_defaults(&cf);
	config_defaults(&back);
	ck_assert_msg(config_env(&cf, err, sizeof(err)) == 0, "%s", err);
	out = print_config(&cf);
	v = printed_value(out, "database_url");
	ck_assert_str_eq(v, "***");
	ck_assert_msg(parse(&back, out, err) == 0, "%s", err);
	free(v);
	free(out);
	config_clear(&cf);
	config_clear(&back);
}
END_TEST

/* Reads packaging/cronvisor.conf from the source tree. */
static char *
read_packaged(size_t *len)
{
	const char *dir = getenv("CV_SOURCE_DIR");
	const char *slash = strrchr(__FILE__, '/');
	char path[4096];
	unsigned char *buf;

	if (dir != NULL)
		snprintf(
		    path, sizeof(path), "%s/packaging/cronvisor.conf", dir);
	else /* run by hand: __FILE__ is the path of tests/check_config.c */
		snprintf(path, sizeof(path), "%.*s/../packaging/cronvisor.conf",
		    slash ? (int)(slash - __FILE__) : 1,
		    slash ? __FILE__ : ".");
	ck_assert_msg(io_read_file(path, 1 << 20, &buf, len) == 0,
	    "cannot read %s (set CV_SOURCE_DIR): %s", path, strerror(errno));
	return (char *)buf;
}

START_TEST(test_packaged)
{
	struct config cf, def;
	char err[CV_ERRLEN], *text;
	size_t len;

	text = read_packaged(&len);
	config_defaults(&cf);
	config_defaults(&def);
	ck_assert_msg(config_parse(&cf, text, len, "cronvisor.conf", err,
	                  sizeof(err)) == 0,
	    "%s", err);
	assert_config_eq(&cf, &def);
	free(text);
	config_clear(&cf);
	config_clear(&def);
}
END_TEST

/*
 * The packaged file shows every setting as "#key = default".  Uncommented,
 * those lines must set every key (a key twice or an unknown key is an
 * error, so as many lines that parse as there are keys are every key) to
 * its default.
 */
/* The keys config check prints: the lines of default_print but comments. */
static size_t
keys_printed(void)
{
	size_t n = 0;

	for (const char *p = default_print; p != NULL && *p;
	     p = (p = strchr(p, '\n')) ? p + 1 : NULL)
		n += *p != '#';
	return n;
}

START_TEST(test_packaged_uncommented)
{
	struct config cf, def;
	char err[CV_ERRLEN], *text, *p;
	size_t len, nset = 0;

	text = read_packaged(&len);
	for (p = text; p != NULL; p = (p = strchr(p, '\n')) ? p + 1 : NULL) {
		if (p[0] == '#' && p[1] >= 'a' && p[1] <= 'z') {
			p[0] = ' ';
			nset++;
		}
	}
	config_defaults(&cf);
	config_defaults(&def);
	ck_assert_msg(config_parse(&cf, text, len, "cronvisor.conf", err,
	                  sizeof(err)) == 0,
	    "%s", err);
	/* every key: as many as config check prints (default_print) */
	ck_assert_uint_eq(nset, keys_printed());
	assert_config_eq(&cf, &def);
	free(text);
	config_clear(&cf);
	config_clear(&def);
}
END_TEST

/*
 * Runs before each test: the tests set the variables they need, and none
 * may come from outside or, with CK_FORK=no, from an earlier test.
 */
static void
clear_env(void)
{
	for (size_t i = 0; i < sizeof(every_env) / sizeof(every_env[0]); i++)
		unsetenv(every_env[i][0]);
}

static Suite *
config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("parse");
	TCase *te = tcase_create("env");
	TCase *tl = tcase_create("load");
	TCase *tp = tcase_create("print");

	tcase_set_timeout(tc, 10);
	tcase_add_checked_fixture(tc, clear_env, NULL);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_every_key);
	tcase_add_loop_test(tc, test_int_bounds, 0, NINT_KEYS);
	tcase_add_loop_test(
	    tc, test_good, 0, (int)(sizeof(goods) / sizeof(goods[0])));
	tcase_add_test(tc, test_quoted_values);
	tcase_add_loop_test(
	    tc, test_bad, 0, (int)(sizeof(bads) / sizeof(bads[0])));
	tcase_add_test(tc, test_line_length);
	tcase_add_test(tc, test_string_length);
	tcase_add_test(tc, test_parse_layers);
	tcase_add_test(tc, test_packaged);
	tcase_add_test(tc, test_packaged_uncommented);
	suite_add_tcase(s, tc);
	tcase_set_timeout(te, 10);
	tcase_add_checked_fixture(te, clear_env, NULL);
	tcase_add_test(te, test_env_every_key);
	tcase_add_test(te, test_env_literal);
	tcase_add_loop_test(
	    te, test_env_bad, 0, (int)(sizeof(env_bads) / sizeof(env_bads[0])));
	suite_add_tcase(s, te);
	tcase_set_timeout(tl, 10);
	tcase_add_checked_fixture(tl, clear_env, NULL);
	tcase_add_test(tl, test_load_missing);
	tcase_add_test(tl, test_load_file);
	tcase_add_test(tl, test_load_size);
	tcase_add_test(tl, test_load_env);
	tcase_add_test(tl, test_load_cross);
	suite_add_tcase(s, tl);
	tcase_set_timeout(tp, 10);
	tcase_add_checked_fixture(tp, clear_env, NULL);
	tcase_add_test(tp, test_print_defaults);
	tcase_add_loop_test(tp, test_print_roundtrip, 0,
	    (int)(sizeof(roundtrips) / sizeof(roundtrips[0])));
	tcase_add_test(tp, test_print_roundtrip_env);
	tcase_add_test(tp, test_print_mask_long);
	tcase_add_loop_test(tp, test_print_mask_urls, 0,
	    (int)(sizeof(url_masks) / sizeof(url_masks[0])));
	tcase_add_loop_test(
	    tp, test_print_mask, 0, (int)(sizeof(masks) / sizeof(masks[0])));
	suite_add_tcase(s, tp);
	return s;
}

int
main(void)
{
	return cvtest_run(config_suite());
}
