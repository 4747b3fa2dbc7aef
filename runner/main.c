/*
 * main.c: cronvisor-runner, the runner helper (zygote.c).  cronvisord
 * starts it with the socket on descriptor 3; it is not run by hand.
 */
#include <stdio.h>
#include <string.h>

#include "runner.h"

int
main(int argc, char **argv)
{
	log_init("cronvisor-runner", LOG_LEVEL_INFO);
	if (argc != 2 || strcmp(argv[1], "--helper") != 0) {
		fprintf(stderr,
		    "usage: cronvisor-runner --helper\n"
		    "cronvisord starts it; it is not run by hand\n");
		return 2;
	}
	return zygote_serve();
}
