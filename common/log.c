/*
 * log.c: the one place cronvisor writes diagnostics.  Every line goes to
 * stderr, where systemd's journal (or the terminal in foreground mode)
 * collects it, as "progname: [prefix: ]message".  A thread may set a prefix
 * such as `run sched-1a2b3c4d-n5-rc0 schedule "backup"` so that every line
 * logged while it handles that run names it.  log_warn() appends
 * strerror(errno), log_warnx() does not; fatal() and fatalx() log and exit.
 * Messages carry names and outputs that users chose, so every control
 * character in a message or a prefix is written out (text_escape(): a
 * newline as \n, ESC as \x1b): one call is always one line, and nothing
 * a user wrote can forge a line or reach an operator's terminal raw.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

static const char *log_progname = "cronvisor";
static _Atomic enum log_level log_current = LOG_LEVEL_INFO;
static _Thread_local char log_pfx[160];

/*
 * Sets the program name that starts each line and the level below which
 * messages are dropped.  progname must outlive every later log call.
 */
void
log_init(const char *progname, enum log_level level)
{
	log_progname = progname;
	log_current = level;
}

/* Changes the level, e.g. after a configuration reload. */
void
log_setlevel(enum log_level level)
{
	log_current = level;
}

/* The level messages are logged at. */
enum log_level
log_getlevel(void)
{
	return log_current;
}

static const char *const log_names[] = {"warn", "info", "debug"};

/* Parses "warn", "info" or "debug"; returns 0, or -1 for anything else. */
int
log_level_parse(const char *name, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(log_names) / sizeof(log_names[0]); i++)
		if (strcmp(name, log_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	return -1;
}

/* Returns the configuration name of a level. */
const char *
log_level_name(enum log_level level)
{
	return log_names[level];
}

/*
 * Sets this thread's prefix (printf-style); NULL or "" clears it.  The
 * prefix is cut at 159 bytes, after its control characters are escaped.
 */
void
log_prefix(const char *fmt, ...)
{
	char raw[sizeof(log_pfx)];
	va_list ap;

	if (fmt == NULL || fmt[0] == '\0') {
		log_pfx[0] = '\0';
		return;
	}
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	text_escape(raw, NULL, log_pfx, sizeof(log_pfx));
}

/*
 * Formats one line and writes it with a single fprintf, so that lines of
 * concurrent threads do not interleave, unless level is below the current
 * one.  errnum >= 0 appends its text.  errno is preserved.
 */
static void CV_PRINTF(3, 0)
    log_vemit(enum log_level level, int errnum, const char *fmt, va_list ap)
{
	int saved = errno;
	char raw[2048], msg[2048];

	if (level > log_current)
		return;
	vsnprintf(raw, sizeof(raw), fmt, ap);
	text_escape(raw, NULL, msg, sizeof(msg));
	fprintf(stderr, "%s: %s%s%s%s%s\n", log_progname, log_pfx,
	    log_pfx[0] ? ": " : "", msg, errnum >= 0 ? ": " : "",
	    errnum >= 0 ? strerror(errnum) : "");
	errno = saved;
}

/* Logs a warning with strerror(errno) appended; errno is preserved. */
void
log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LEVEL_WARN, errno, fmt, ap);
	va_end(ap);
}

/* Logs a warning; errno is preserved. */
void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LEVEL_WARN, -1, fmt, ap);
	va_end(ap);
}

/* Logs at info level; errno is preserved. */
void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LEVEL_INFO, -1, fmt, ap);
	va_end(ap);
}

/* Logs at debug level; errno is preserved. */
void
log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LEVEL_DEBUG, -1, fmt, ap);
	va_end(ap);
}

/* Logs with strerror(errno) and exits with status 1. */
void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LEVEL_WARN, errno, fmt, ap);
	va_end(ap);
	exit(1);
}

/* Logs and exits with status 1. */
void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LEVEL_WARN, -1, fmt, ap);
	va_end(ap);
	exit(1);
}

/*
 * Formats a message into a caller's error buffer (err may be NULL or
 * errlen 0: then nothing is written) and returns -1, so that a parser can
 * end with `return log_errbuf(err, errlen, "hour: %d is out of range",
 * h);`.  errno is preserved.
 */
int
log_errbuf(char *err, size_t errlen, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	errno = saved;
	return -1;
}
