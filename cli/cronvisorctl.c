/*
 * cronvisorctl.c: the operator's command line.  This file only finds the
 * subcommand and hands it the rest of the arguments; each subcommand is a
 * file of its own.  It also holds what the API commands share: the global
 * options (--url, --token, …), which may stand before the command name as
 * well as after it, and their environment defaults, and the reading of
 * the files (or stdin) and secret files that commands are given.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisorctl.h"

struct ctl ctl; /* the process's one global: the API options */

/* One subcommand: its name, entry point and line of the usage text. */
struct ctl_command {
	const char *name;                   /* first argument */
	int (*main)(int argc, char **argv); /* entry point, argv[0] = name */
};

static const struct ctl_command commands[] = {
    {"next", next_main},
    {"config", config_main},
    {"db", db_main},
    {"token", token_main},
    {"schedules", schedules_main},
    {"runs", runs_main},
    {"executions", executions_main},
    {"jobs", jobs_main},
    {"agents", agents_main},
    {"pipelines", pipelines_main},
    {"data-sources", datasources_main},
    {"mcp", mcp_main},
    {"apply", apply_main},
};

/* Prints the list of commands. */
static void
usage(FILE *fp)
{
	fputs(
	    "usage: cronvisorctl [GLOBAL OPTIONS] COMMAND [ARGS]\n"
	    "\n"
	    "local commands:\n"
	    "  next              preview the fire times of a schedule\n"
	    "  config check      print the effective configuration\n"
	    "  db migrate        apply the database schema migrations\n"
	    "  db status         list applied and pending migrations\n"
	    "  token create      make an API token (in the database)\n"
	    "  token list        list the API tokens\n"
	    "  token revoke      revoke an API token\n"
	    "  version           print the version\n"
	    "\n"
	    "API commands:\n"
	    "  schedules list    list schedules\n"
	    "  schedules get     show one schedule and its next fire times\n"
	    "  schedules preview show what a schedule's next firing expands to\n"
	    "  schedules create  create a schedule from flags or a file\n"
	    "  schedules import  create many schedules from a JSON-lines file\n"
	    "  schedules update  change some fields of a schedule\n"
	    "  schedules delete  delete schedules\n"
	    "  schedules pause   pause a schedule\n"
	    "  schedules resume  resume a paused schedule\n"
	    "  schedules trigger run a schedule once, now\n"
	    "  runs list         list the runs of a schedule\n"
	    "  runs show         show one run\n"
	    "  executions list   list executions (a slot's run, its jobs)\n"
	    "  executions show   show one execution, its jobs by status\n"
	    "  executions jobs   list the jobs of an execution\n"
	    "  jobs show         show one job and its attempts\n"
	    "  agents list       list agents\n"
	    "  agents show       show one agent\n"
	    "  agents create     register an agent from flags or a file\n"
	    "  agents update     change some fields of an agent\n"
	    "  agents delete     delete an agent\n"
	    "  agents versions   list the versions of an agent\n"
	    "  agents add-version add a version to an agent\n"
	    "  agents deploy     deploy a version in an environment\n"
	    "  agents promote    deploy what one environment runs in another\n"
	    "  agents rollback   go back to an environment's previous version\n"
	    "  agents deployments show what each environment runs, and the log\n"
	    "  agents health     show an agent's health and its last probes\n"
	    "  pipelines list    list pipelines\n"
	    "  pipelines show    show one pipeline and its steps\n"
	    "  pipelines create  create a pipeline from a file\n"
	    "  pipelines update  change some members of a pipeline\n"
	    "  pipelines delete  delete a pipeline\n"
	    "  data-sources list    list the registered tables\n"
	    "  data-sources show    show one, with its columns\n"
	    "  data-sources create  register a table (admin)\n"
	    "  data-sources delete  delete a registration (admin)\n"
	    "  data-sources preview show what a data-source string expands to\n"
	    "  apply -f FILE|DIR make schedules, agents and pipelines exist as\n"
	    "                    the files say (JSON or YAML)\n"
	    "  mcp               serve scheduling tools to an AI agent (MCP, stdio)\n"
	    "\n" CTL_GLOBAL_USAGE "\n"
	    "Run 'cronvisorctl COMMAND --help' for a command's options.\n",
	    fp);
}

/* An id that can stand in a path as it is; else a usage error. */
int
ctl_check_id(const char *id)
{
	if (id[0] == '\0' ||
	    id[strspn(id,
	        "abcdefghijklmnopqrstuvwxyz"
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	        "0123456789-_.")] != '\0' ||
	    id[0] == '.')
		return ctl_usage_error("\"%s\" is not an id", id);
	return 0;
}

/*
 * Reports a wrong command line on stderr, with a pointer to --help, and
 * returns CTL_EXIT_USAGE for the caller to return.
 */
int
ctl_usage_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warnx("%s (see --help)", msg);
	return CTL_EXIT_USAGE;
}

/*
 * Stores one global option (c is a CTL_OPT_* code from getopt_long) in
 * ctl.  Returns 1 if c was a global option, 0 if the caller must handle
 * it.  arg must outlive the process's use of ctl (it is an argv string).
 */
int
ctl_global_option(int c, const char *arg)
{
	switch (c) {
	case CTL_OPT_URL:
		ctl.url = arg;
		return 1;
	case CTL_OPT_TOKEN:
		ctl_argv_secret("--token", "CRONVISOR_TOKEN or --token-file");
		ctl.token = arg;
		ctl.token_file = NULL;
		return 1;
	case CTL_OPT_TFILE:
		ctl.token_file = arg;
		ctl.token = NULL;
		return 1;
	case CTL_OPT_SOCKET:
		ctl.unix_socket = arg;
		return 1;
	case CTL_OPT_JSON:
		ctl.json = 1;
		return 1;
	case CTL_OPT_DRY:
		ctl.dry_run = 1;
		return 1;
	}
	return 0;
}

/*
 * Warns that option opt put a secret on the command line, where every
 * local user sees it (ps, /proc/PID/cmdline), and says what to use
 * instead.
 */
void
ctl_argv_secret(const char *opt, const char *instead)
{
	log_warnx("%s on the command line shows in ps to every local user; "
	          "use %s instead",
	    opt, instead);
}

/* Reads all of stdin, at most CTL_INPUT_MAX bytes, for option opt. */
static char *
ctl_read_stdin(const char *opt)
{
	unsigned char *buf = NULL, *p;
	size_t len = 0, cap = 0, want;
	ssize_t n;

	for (;;) {
		if (cap - len < 2) {
			cap = cap ? cap * 2 : 65536;
			if ((p = realloc(buf, cap)) == NULL)
				fatal("realloc");
			buf = p;
		}
		want = cap - len - 1;
		/* io_read() returns short only at the end of the input. */
		if ((n = io_read(0, buf + len, want)) == -1) {
			log_warn("--%s -: reading stdin", opt);
			free(buf);
			return NULL;
		}
		len += (size_t)n;
		if (len > CTL_INPUT_MAX) {
			log_warnx(
			    "--%s -: more than %d bytes", opt, CTL_INPUT_MAX);
			free(buf);
			return NULL;
		}
		if ((size_t)n < want)
			break;
	}
	buf[len] = '\0';
	return (char *)buf;
}

/*
 * Reads the file path given to option opt (its long name, "file"), or
 * stdin for "-": at most CTL_INPUT_MAX bytes, from a regular file (a FIFO
 * or a device would block the command).  Returns a NUL-terminated buffer
 * the caller frees, or NULL after a message naming the option and the
 * file.
 */
char *
ctl_read_input(const char *opt, const char *path)
{
	unsigned char *buf = NULL;
	size_t len;

	if (strcmp(path, "-") == 0)
		return ctl_read_stdin(opt);
	if (io_read_file(path, CTL_INPUT_MAX, &buf, &len) == 0)
		return (char *)buf;
	if (errno == EINVAL)
		log_warnx(
		    "--%s %s: not a regular file (- reads stdin)", opt, path);
	else
		log_warn("--%s %s", opt, path);
	return NULL;
}

/*
 * Cuts the text in buf down to its first line without the line end and
 * the blanks around it, moved to the start of buf: a secret as a file
 * holds it.  Returns its length, 0 when that line is blank.
 */
size_t
ctl_first_line(char *buf)
{
	char *s = buf, *e;

	s[strcspn(s, "\r\n")] = '\0';
	s += strspn(s, " \t");
	for (e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t');)
		*--e = '\0';
	memmove(buf, s, (size_t)(e - s) + 1);
	return (size_t)(e - s);
}

/*
 * Reads a secret (what: "API token", "database URL") from the file at
 * path: its first line, without the line end and blanks around it.
 * Returns it as a new string that the caller frees, or NULL after a
 * message naming the file.
 */
char *
ctl_read_secret(const char *what, const char *path)
{
	unsigned char *buf;
	size_t len;

	if (io_read_file(path, 65536, &buf, &len) == -1) {
		log_warn("cannot read the %s from %s", what, path);
		return NULL;
	}
	if (ctl_first_line((char *)buf) == 0) {
		log_warnx("%s: no %s on its first line", path, what);
		free(buf);
		return NULL;
	}
	return (char *)buf;
}

/*
 * Parses the whole decimal integer s, the value of option opt, between
 * min and max.  Returns 0, or CTL_EXIT_USAGE after a message naming opt.
 */
int
ctl_parse_int(
    const char *opt, const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0)
		return ctl_usage_error(
		    "%s: \"%s\" is not a whole number", opt, s);
	if (v < min || v > max)
		return ctl_usage_error("%s: %lld is not between %lld and %lld",
		    opt, v, (long long)min, (long long)max);
	*out = v;
	return 0;
}

/*
 * Consumes the global options in front of the command name, from argv[1]
 * on, in place; returns the index of the command name, or -1 after a
 * usage message.  Only the long forms exist, with "--opt VALUE" or
 * "--opt=VALUE".
 */
static int
leading_options(int argc, char **argv)
{
	static const struct option opts[] = {CTL_GLOBAL_OPTIONS};
	int i = 1;

	while (i < argc && strncmp(argv[i], "--", 2) == 0 && argv[i][2]) {
		const char *name = argv[i] + 2, *eq = strchr(name, '=');
		size_t n = eq ? (size_t)(eq - name) : strlen(name);
		size_t k;

		for (k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
			if (strlen(opts[k].name) == n &&
			    strncmp(opts[k].name, name, n) == 0)
				break;
		if (k == sizeof(opts) / sizeof(opts[0]))
			return i; /* --help, --version: the "command" */
		if (opts[k].has_arg == no_argument) {
			ctl_global_option(opts[k].val, NULL);
		} else if (eq != NULL) {
			ctl_global_option(opts[k].val, eq + 1);
		} else if (i + 1 < argc) {
			ctl_global_option(opts[k].val, argv[++i]);
		} else {
			ctl_usage_error("--%s needs a value", opts[k].name);
			return -1;
		}
		i++;
	}
	return i;
}

/*
 * Finds the command after the leading global options (whose environment
 * defaults are read first) and runs it; returns its exit status.
 */
int
main(int argc, char **argv)
{
	int cmd, rc;

	io_fix_stdio();
	log_init("cronvisorctl", LOG_LEVEL_INFO);
	ctl.url = getenv("CRONVISOR_URL");
	ctl.token = getenv("CRONVISOR_TOKEN");
	if (ctl.token == NULL || ctl.token[0] == '\0')
		ctl.token_file = getenv("CRONVISOR_TOKEN_FILE");
	ctl.unix_socket = getenv("CRONVISOR_UNIX_SOCKET");
	if ((cmd = leading_options(argc, argv)) == -1)
		return CTL_EXIT_USAGE;
	if (cmd >= argc)
		return usage(stderr), CTL_EXIT_USAGE;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[cmd], commands[i].name) == 0) {
			rc = commands[i].main(argc - cmd, argv + cmd);
			api_cleanup();
			fflush(stdout);
			return rc;
		}
	if (strcmp(argv[cmd], "version") == 0 ||
	    strcmp(argv[cmd], "--version") == 0) {
		printf("cronvisorctl %s\n", CV_VERSION);
		return CTL_EXIT_OK;
	}
	if (strcmp(argv[cmd], "help") == 0 ||
	    strcmp(argv[cmd], "--help") == 0 || strcmp(argv[cmd], "-h") == 0) {
		usage(stdout);
		return CTL_EXIT_OK;
	}
	return ctl_usage_error("unknown command \"%s\"", argv[cmd]);
}
