/*
 * cmd.c: what the commands made of subcommands ("cronvisorctl schedules
 * list", "cronvisorctl agents deploy") share: finding the subcommand in
 * the group's table, the summary and per-subcommand usage texts, and the
 * getopt_long loop with what every such command line means the same way
 * (the global options, -h and --help, an option the subcommand does not
 * take).  What each group's options and arguments mean stays in its own
 * file, behind the hooks of struct cmd_group.
 */
#include <stdio.h>
#include <string.h>

#include "cronvisorctl.h"

/* The entry i of g's table. */
static const struct cmd *
cmd_at(const struct cmd_group *g, size_t i)
{
	return (const struct cmd *)((const char *)g->cmds + i * g->size);
}

/*
 * Prints the usage of subcommand c on fp, with the global options; for
 * NULL, the group's summary: its synopsis and each subcommand's first
 * usage line.
 */
static void
cmd_usage(const struct cmd_group *g, const struct cmd *c, FILE *fp)
{
	if (c != NULL) {
		fprintf(fp, "%s\n%s", c->usage, CTL_GLOBAL_USAGE);
		return;
	}
	fputs(g->synopsis, fp);
	for (size_t i = 0; i < g->ncmds; i++) {
		c = cmd_at(g, i);
		fprintf(fp, "%.*s", (int)strcspn(c->usage, "\n") + 1, c->usage);
	}
	fprintf(fp, "\nRun 'cronvisorctl %s COMMAND --help' for its options.\n",
	    g->name);
}

/* Looks the long name of option code up in options, for messages. */
const char *
cmd_optname(const struct option *options, int code)
{
	for (const struct option *o = options; o->name; o++)
		if (o->val == code)
			return o->name;
	return "?";
}

/*
 * Handles one option getopt_long returned for subcommand c: a global one
 * goes to ctl, --help prints c's usage, one that c does not take is
 * refused, and the others go to g->option().  Returns 0, -1 for --help
 * (printed), or CTL_EXIT_USAGE.
 */
static int
cmd_option(const struct cmd_group *g, const struct cmd *c, int opt, int argc,
    char **argv, void *args)
{
	if (ctl_global_option(opt, optarg))
		return 0;
	if (opt < g->base || opt >= g->base + g->count)
		return CTL_EXIT_USAGE; /* getopt_long said why */
	opt -= g->base;
	if (opt == g->help) {
		cmd_usage(g, c, stdout);
		return -1;
	}
	if (!((c->opts | g->always) & CMD_BIT(opt)))
		return ctl_usage_error("%s %s does not take --%s", g->name,
		    c->name, cmd_optname(g->options, g->base + opt));
	return g->option(opt, argc, argv, args);
}

/*
 * Reads the options of subcommand c's command line, argv[0] its name,
 * into args through g->option(), up to a "--".  getopt_long moves the
 * positional arguments behind the options: optind is left at the first
 * of them.  Returns 0, -1 for --help (printed), or CTL_EXIT_USAGE after
 * a message.
 */
int
cmd_getopt(const struct cmd_group *g, const struct cmd *c, int argc,
    char **argv, void *args)
{
	char prog[64], *name = argv[0];
	int opt, rc = 0;

	/* getopt_long's own messages start with argv[0]: make it say which
	 * command they are about, for as long as it runs. */
	snprintf(prog, sizeof(prog), "cronvisorctl %s %s", g->name, c->name);
	argv[0] = prog;
	optind = 1;
	while (rc == 0 &&
	    (opt = getopt_long(argc, argv, "h", g->options, NULL)) != -1)
		rc = cmd_option(g, c, opt == 'h' ? g->base + g->help : opt,
		    argc, argv, args);
	argv[0] = name;
	return rc;
}

/*
 * Checks that the npos positional arguments pos are as many as c takes;
 * missing names what is missing ("the schedule id").  Returns 0, or
 * CTL_EXIT_USAGE after a message.
 */
int
cmd_check_pos(const struct cmd_group *g, const struct cmd *c, char **pos,
    int npos, const char *missing)
{
	if (npos < c->min_pos)
		return ctl_usage_error(
		    "%s %s: missing %s", g->name, c->name, missing);
	if (npos > c->max_pos)
		return ctl_usage_error("%s %s: unexpected \"%s\"", g->name,
		    c->name, pos[c->max_pos]);
	return 0;
}

/*
 * Runs "cronvisorctl GROUP SUB [ARGS]" (argv[0] is GROUP): finds SUB in
 * g's table, has g->parse() fill args (the group's own struct of what a
 * command line gave) and g->run() run it.  With no SUB, or "help", -h or
 * --help, prints the summary.  A usage error prints the subcommand's
 * usage after the message; so does CTL_EXIT_USAGE from g->run() (a
 * flag's value the command could not turn into JSON).  Returns the exit
 * status.
 */
int
cmd_main(const struct cmd_group *g, void *args, int argc, char **argv)
{
	const struct cmd *c = NULL;
	int rc;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		cmd_usage(g, NULL, argc < 2 ? stderr : stdout);
		return argc < 2 ? CTL_EXIT_USAGE : CTL_EXIT_OK;
	}
	for (size_t i = 0; i < g->ncmds && c == NULL; i++)
		if (strcmp(argv[1], cmd_at(g, i)->name) == 0)
			c = cmd_at(g, i);
	if (c == NULL) {
		ctl_usage_error("unknown %s command \"%s\"", g->name, argv[1]);
		cmd_usage(g, NULL, stderr);
		return CTL_EXIT_USAGE;
	}
	if ((rc = g->parse(g, c, argc - 1, argv + 1, args)) != 0) {
		if (rc == -1)
			return CTL_EXIT_OK;
		cmd_usage(g, c, stderr);
		return rc;
	}
	if ((rc = g->run(c, args)) == CTL_EXIT_USAGE)
		cmd_usage(g, c, stderr);
	return rc;
}
