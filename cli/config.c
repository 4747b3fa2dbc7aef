/*
 * config.c: "cronvisorctl config check [-f FILE]" reads the configuration
 * the daemons would read (the file, then CRONVISOR_* environment variables)
 * and prints the effective result, or the first error with its place.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cronvisorctl.h"

/* Entry point of "cronvisorctl config"; argv[0] is "config". */
int
config_main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"file", required_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *path = CONFIG_PATH;
	int must_exist = 0, c;
	struct config cf;
	char err[CV_ERRLEN];

	if (argc < 2 || strcmp(argv[1], "check") != 0) {
		if (argc >= 2 && strcmp(argv[1], "--help") == 0)
			goto help;
		return ctl_usage_error("usage: cronvisorctl config check "
		                       "[-f FILE]");
	}
	optind = 1;
	while ((c = getopt_long(argc - 1, argv + 1, "f:h", opts, NULL)) != -1)
		switch (c) {
		case 'f':
			path = optarg;
			must_exist = 1;
			break;
		case 'h':
			goto help;
		default:
			return CTL_EXIT_USAGE;
		}
	if (optind != argc - 1)
		return ctl_usage_error("config check takes no arguments");
	config_defaults(&cf);
	if (config_load(&cf, path, must_exist, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		config_clear(&cf);
		return CTL_EXIT_FAIL;
	}
	config_print(&cf, stdout);
	config_clear(&cf);
	return CTL_EXIT_OK;
help:
	printf("usage: cronvisorctl config check [-f FILE]\n\n"
	       "Reads FILE (default %s, which may be absent),\n"
	       "then the CRONVISOR_* environment variables, and prints the\n"
	       "effective configuration, or the first error and exit 1.\n",
	    CONFIG_PATH);
	return CTL_EXIT_OK;
}
