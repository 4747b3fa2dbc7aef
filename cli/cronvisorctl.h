/*
 * cronvisorctl.h: the table of contents of the operator's command line.
 * Each subcommand lives in its own file and takes the arguments after its
 * name; it returns the process exit status (0 ok, 1 failure, 2 usage).
 */
#ifndef CRONVISORCTL_H
#define CRONVISORCTL_H

#include "cronvisor.h"

#define CTL_EXIT_OK    0 /* the command did what was asked */
#define CTL_EXIT_FAIL  1 /* it could not: bad input, unknown zone, … */
#define CTL_EXIT_USAGE 2 /* the command line itself was wrong */

/* cronvisorctl.c */
int ctl_usage_error(const char *fmt, ...) CV_PRINTF(1, 2);

/* next.c: preview fire times */
int next_main(int argc, char **argv);
void next_usage(FILE *fp);

/* config.c: print the effective configuration */
int config_main(int argc, char **argv);

/* db.c: apply and list the schema migrations */
int db_main(int argc, char **argv);

#endif
