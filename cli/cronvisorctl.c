/*
 * cronvisorctl.c: the operator's command line.  This file only finds the
 * subcommand and hands it the rest of the arguments; each subcommand is a
 * file of its own.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cronvisorctl.h"

static void
usage(FILE *fp)
{
	fputs("usage: cronvisorctl COMMAND [ARGS]\n"
	      "\n"
	      "commands:\n"
	      "  next          preview the fire times of a schedule\n"
	      "  config check  print the effective configuration\n"
	      "  db migrate    apply the database schema migrations\n"
	      "  db status     list applied and pending migrations\n"
	      "  version       print the version\n"
	      "\n"
	      "Run 'cronvisorctl COMMAND --help' for a command's options.\n",
	    fp);
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

int
main(int argc, char **argv)
{
	io_fix_stdio();
	log_init("cronvisorctl", LOG_LEVEL_INFO);
	if (argc < 2)
		return usage(stderr), CTL_EXIT_USAGE;
	if (strcmp(argv[1], "next") == 0)
		return next_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "config") == 0)
		return config_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "db") == 0)
		return db_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "version") == 0 ||
	    strcmp(argv[1], "--version") == 0) {
		printf("cronvisorctl %s\n", CV_VERSION);
		return CTL_EXIT_OK;
	}
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return CTL_EXIT_OK;
	}
	return ctl_usage_error("unknown command \"%s\"", argv[1]);
}
