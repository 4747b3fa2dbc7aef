/*
 * spec.c: a run of an exec target as bytes, for the runner helper
 * (zygote.c), which forks runners in a process that has none of the
 * supervisor's libraries mapped.  The supervisor encodes the run_spec into
 * one msgpack array whose positions are fixed (SPEC_* below); the helper
 * decodes it into a run_spec that owns its strings.  The first element is
 * the version of this layout: a helper started from a newer package than
 * the supervisor that runs it refuses the spec, and the supervisor forks
 * the runner itself.  Only exec targets travel this way: an HTTP run needs
 * libcurl, which the helper does not have.
 *
 * The bytes come from the supervisor over a private socket, but they are
 * checked as if they did not: the same pre-check as a result frame
 * (result_check_msgpack()), every type, every range, no NUL inside a
 * string; a bad spec is an error message, never a crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "runner.h"

#define SPEC_VERSION 1

/* The positions of the array. */
enum {
	SPEC_VER,
	SPEC_RUN_ID,
	SPEC_SCHEDULE,
	SPEC_ARGV,
	SPEC_ENV,
	SPEC_CWD,
	SPEC_RUN_AS,
	SPEC_UID,
	SPEC_GID,
	SPEC_TIMEOUT,
	SPEC_KILL_GRACE,
	SPEC_OUTPUT_TAIL,
	SPEC_NOT_BEFORE,
	SPEC_CPU,
	SPEC_MEMORY,
	SPEC_NOFILE,
	SPEC_NPROC,
	SPEC_FSIZE,
	SPEC_LOG_LEVEL,
	SPEC_N
};

static int
pack_str(msgpack_packer *pk, const char *s)
{
	if (s == NULL)
		return msgpack_pack_nil(pk);
	return msgpack_pack_str_with_body(pk, s, strlen(s));
}

static int
pack_strv(msgpack_packer *pk, char *const *v)
{
	size_t n = 0;
	int rc;

	while (v != NULL && v[n] != NULL)
		n++;
	rc = msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++)
		rc |= pack_str(pk, v[i]);
	return rc;
}

/*
 * Encodes the exec run spec (and the log level its runner logs at) into a
 * malloc'd buffer.  Returns 0 with *buf and *len set, or -1 if out of
 * memory or spec is not an exec run.
 */
int
spec_encode(const struct run_spec *spec, enum log_level level,
    unsigned char **buf, size_t *len)
{
	const struct run_limits *l = &spec->limits;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int rc;

	if (spec->target != RUN_TARGET_EXEC)
		return -1;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	rc = msgpack_pack_array(&pk, SPEC_N);
	rc |= msgpack_pack_int(&pk, SPEC_VERSION);
	rc |= pack_str(&pk, spec->run_id);
	rc |= pack_str(&pk, spec->schedule);
	rc |= pack_strv(&pk, spec->argv);
	rc |= pack_strv(&pk, spec->env);
	rc |= pack_str(&pk, spec->cwd);
	rc |= spec->run_as ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk);
	rc |= msgpack_pack_uint32(&pk, (uint32_t)spec->uid);
	rc |= msgpack_pack_uint32(&pk, (uint32_t)spec->gid);
	rc |= msgpack_pack_int64(&pk, spec->timeout);
	rc |= msgpack_pack_int64(&pk, spec->kill_grace);
	rc |= msgpack_pack_uint64(&pk, spec->output_tail);
	rc |= msgpack_pack_int64(&pk, spec->not_before_us);
	rc |= msgpack_pack_int64(&pk, l->cpu_seconds);
	rc |= msgpack_pack_int64(&pk, l->memory_mb);
	rc |= msgpack_pack_int64(&pk, l->nofile);
	rc |= msgpack_pack_int64(&pk, l->nproc);
	rc |= msgpack_pack_int64(&pk, l->fsize_mb);
	rc |= msgpack_pack_int(&pk, (int)level);
	if (rc != 0) {
		msgpack_sbuffer_destroy(&sb);
		return -1;
	}
	*len = sb.size;
	*buf = (unsigned char *)msgpack_sbuffer_release(&sb);
	return 0;
}

/* The names of the positions, for messages. */
static const char *const spec_names[SPEC_N] = {"version", "run_id", "schedule",
    "argv", "env", "cwd", "run_as", "uid", "gid", "timeout", "kill_grace",
    "output_tail", "not_before_us", "limits.cpu_seconds", "limits.memory_mb",
    "limits.nofile", "limits.nproc", "limits.fsize_mb", "log_level"};

/* Copies a msgpack string without NUL bytes; NULL if it has one. */
static char *
spec_strdup(const msgpack_object *o)
{
	char *s;

	if (o->type != MSGPACK_OBJECT_STR ||
	    memchr(o->via.str.ptr, '\0', o->via.str.size) != NULL)
		return NULL;
	if ((s = malloc(o->via.str.size + 1)) == NULL)
		return NULL;
	memcpy(s, o->via.str.ptr, o->via.str.size);
	s[o->via.str.size] = '\0';
	return s;
}

/* An array of strings as a NULL-terminated vector; NULL if bad. */
static char **
spec_strv(const msgpack_object *o)
{
	char **v;
	uint32_t n;

	if (o->type != MSGPACK_OBJECT_ARRAY)
		return NULL;
	n = o->via.array.size;
	if ((v = calloc((size_t)n + 1, sizeof(*v))) == NULL)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		if ((v[i] = spec_strdup(&o->via.array.ptr[i])) == NULL) {
			for (uint32_t k = 0; k < i; k++)
				free(v[k]);
			free(v);
			return NULL;
		}
	}
	return v;
}

/* An integer from min to max; -1 if it is not. */
static int
spec_int(const msgpack_object *o, int64_t min, int64_t max, int64_t *out)
{
	int64_t v;

	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		if (o->via.u64 > INT64_MAX)
			return -1;
		v = (int64_t)o->via.u64;
	} else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		v = o->via.i64;
	} else {
		return -1;
	}
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Frees what spec_decode() allocated and zeroes spec. */
void
spec_free(struct run_spec *spec)
{
	char **v;

	for (int k = 0; k < 2; k++) {
		v = (char **)(k == 0 ? spec->argv : spec->env);
		for (size_t i = 0; v != NULL && v[i] != NULL; i++)
			free(v[i]);
		free(v);
	}
	free((char *)spec->run_id);
	free((char *)spec->schedule);
	free((char *)spec->cwd);
	memset(spec, 0, sizeof(*spec));
}

/* Decodes element i of the array a into spec; -1 if it is bad. */
static int
spec_element(const msgpack_object *a, int i, struct run_spec *spec,
    enum log_level *level)
{
	const msgpack_object *o = &a[i];
	int64_t *ints[] = {[SPEC_TIMEOUT] = &spec->timeout,
	    [SPEC_KILL_GRACE] = &spec->kill_grace,
	    [SPEC_NOT_BEFORE] = &spec->not_before_us,
	    [SPEC_CPU] = &spec->limits.cpu_seconds,
	    [SPEC_MEMORY] = &spec->limits.memory_mb,
	    [SPEC_NOFILE] = &spec->limits.nofile,
	    [SPEC_NPROC] = &spec->limits.nproc,
	    [SPEC_FSIZE] = &spec->limits.fsize_mb};
	int64_t v;

	switch (i) {
	case SPEC_VER:
		return spec_int(o, SPEC_VERSION, SPEC_VERSION, &v);
	case SPEC_RUN_ID:
		return (spec->run_id = spec_strdup(o)) == NULL ? -1 : 0;
	case SPEC_SCHEDULE:
		return (spec->schedule = spec_strdup(o)) == NULL ? -1 : 0;
	case SPEC_ARGV:
		return (spec->argv = spec_strv(o)) == NULL ||
		        spec->argv[0] == NULL
		    ? -1
		    : 0;
	case SPEC_ENV:
		return (spec->env = spec_strv(o)) == NULL ? -1 : 0;
	case SPEC_CWD:
		if (o->type == MSGPACK_OBJECT_NIL)
			return 0;
		return (spec->cwd = spec_strdup(o)) == NULL ? -1 : 0;
	case SPEC_RUN_AS:
		if (o->type != MSGPACK_OBJECT_BOOLEAN)
			return -1;
		spec->run_as = o->via.boolean;
		return 0;
	case SPEC_UID:
	case SPEC_GID:
		if (spec_int(o, 0, UINT32_MAX - 1, &v) == -1)
			return -1;
		if (i == SPEC_UID)
			spec->uid = (uid_t)v;
		else
			spec->gid = (gid_t)v;
		return 0;
	case SPEC_OUTPUT_TAIL:
		if (spec_int(o, 0, RESULT_OUTPUT_MAX, &v) == -1)
			return -1;
		spec->output_tail = (size_t)v;
		return 0;
	case SPEC_LOG_LEVEL:
		if (spec_int(o, LOG_LEVEL_WARN, LOG_LEVEL_DEBUG, &v) == -1)
			return -1;
		*level = (enum log_level)v;
		return 0;
	default:
		return spec_int(
		    o, i == SPEC_TIMEOUT ? 1 : 0, INT64_MAX, ints[i]);
	}
}

/*
 * Decodes what spec_encode() made.  Returns 0 with spec an exec run that
 * owns its strings (spec_free() them) and *level the log level to use, or
 * -1 with a message in err and nothing allocated.
 */
int
spec_decode(const unsigned char *buf, size_t len, struct run_spec *spec,
    enum log_level *level, char *err, size_t errlen)
{
	msgpack_unpacked up;
	const msgpack_object *a;
	const char *why;
	size_t off = 0;
	int rc = -1;

	memset(spec, 0, sizeof(*spec));
	spec->target = RUN_TARGET_EXEC;
	if ((why = result_check_msgpack(buf, len, &off)) != NULL)
		return log_errbuf(err, errlen, "run spec: %s", why);
	if (off != len)
		return log_errbuf(err, errlen, "run spec: trailing data");
	off = 0;
	msgpack_unpacked_init(&up);
	if (msgpack_unpack_next(&up, (const char *)buf, len, &off) !=
	        MSGPACK_UNPACK_SUCCESS ||
	    off != len) {
		log_errbuf(err, errlen, "run spec: not valid msgpack");
		goto out;
	}
	if (up.data.type != MSGPACK_OBJECT_ARRAY ||
	    up.data.via.array.size != SPEC_N) {
		log_errbuf(err, errlen, "run spec: not an array of %d", SPEC_N);
		goto out;
	}
	a = up.data.via.array.ptr;
	for (int i = 0; i < SPEC_N; i++) {
		if (spec_element(a, i, spec, level) == -1) {
			log_errbuf(
			    err, errlen, "run spec: bad %s", spec_names[i]);
			spec_free(spec);
			spec->target = RUN_TARGET_EXEC;
			goto out;
		}
	}
	rc = 0;
out:
	msgpack_unpacked_destroy(&up);
	return rc;
}
