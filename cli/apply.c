/*
 * apply.c: "cronvisorctl apply -f FILE|DIR", schedules, agents and
 * pipelines as code (docs/apply.md).  Reads the files (JSON, or YAML
 * through yaml.c), each a document of the form
 *     set: NAME            (optional; --set overrides)
 *     agents: [...]        (the bodies of POST /agents)
 *     pipelines: [...]     (of POST /pipelines)
 *     schedules: [...]     (of POST /schedules)
 * replaces every {"$env": "NAME"} with the variable's value (secrets stay
 * out of the files), and sends the whole set as one POST /apply, which
 * makes it exist as written in one transaction or changes nothing.  An
 * error the API names a field of ("schedules[7].cron") is told as where
 * it is in the files: "nightly.yaml: schedules[1].cron: ...".
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <regex.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cronvisorctl.h"
#include "yaml_json.h"

#define APPLY_FILES_MAX 1000 /* files one apply reads */

static const char *const lists[] = {"agents", "pipelines", "schedules"};
#define NLISTS 3

/* Where a document of the body came from. */
struct origin {
	const char *file; /* as named (a directory's: DIR/NAME) */
	size_t index;     /* in its file's list */
};

/* What the files make up. */
struct apply_set {
	char *files[APPLY_FILES_MAX];
	size_t nfiles;
	const char *set;      /* --set, or the files' */
	const char *set_file; /* the file that named it */
	json_t *body;         /* POST /apply's */
	struct origin *origins[NLISTS];
	size_t norigins[NLISTS];
};

static struct apply_set *the_set; /* for apply_where() */

static void
usage(FILE *fp)
{
	fputs(
	    "usage: cronvisorctl apply -f FILE|DIR [-f ...] [--set NAME] "
	    "[--prune]\n"
	    "           [--dry-run] [--owner O] [--json]\n"
	    "\n"
	    "Makes the agents, pipelines and schedules of the files exist as\n"
	    "written (docs/apply.md): creates the missing, replaces the "
	    "changed,\n"
	    "leaves the unchanged alone (their state and counts kept). One\n"
	    "transaction: a bad file changes nothing.\n"
	    "\n"
	    "  -f, --file F    a JSON or YAML file, a directory of them (*.json,\n"
	    "                  *.yaml, *.yml, in name order), or - for stdin\n"
	    "  --set NAME      the set the documents make up (else the files'\n"
	    "                  set: key)\n"
	    "  --prune         delete the set's things the files no longer name\n"
	    "  --prune-all     --prune, also when the files name nothing\n"
	    "  --dry-run       print the plan; change nothing\n"
	    "  --owner O       an admin's: apply as owner O\n"
	    "\n" CTL_GLOBAL_USAGE,
	    fp);
}

/* Adds path to the files to read; -1 after a message. */
static int
add_file(struct apply_set *s, const char *path)
{
	if (s->nfiles == APPLY_FILES_MAX) {
		log_warnx("more than %d files", APPLY_FILES_MAX);
		return -1;
	}
	if ((s->files[s->nfiles] = strdup(path)) == NULL)
		fatalx("out of memory");
	s->nfiles++;
	return 0;
}

/* The directory's entries that apply reads: visible, .json/.yaml/.yml. */
static int
wanted(const struct dirent *d)
{
	const char *dot = strrchr(d->d_name, '.');

	return d->d_name[0] != '.' && dot &&
	    (strcmp(dot, ".json") == 0 || strcmp(dot, ".yaml") == 0 ||
	        strcmp(dot, ".yml") == 0);
}

/* -f PATH: a file, stdin, or a directory's files.  -1 after a message. */
static int
add_path(struct apply_set *s, const char *path)
{
	struct dirent **ents;
	struct stat st;
	char buf[4096];
	int n, r = 0;

	if (strcmp(path, "-") == 0 || stat(path, &st) == -1 ||
	    !S_ISDIR(st.st_mode))
		return add_file(s, path); /* a missing file says so when read */
	if ((n = scandir(path, &ents, wanted, alphasort)) == -1) {
		log_warn("-f %s", path);
		return -1;
	}
	if (n == 0)
		log_warnx("-f %s: no *.json, *.yaml or *.yml file in it", path),
		    r = -1;
	for (int i = 0; i < n; i++) {
		if (r == 0) {
			snprintf(buf, sizeof(buf), "%s%s%s", path,
			    path[strlen(path) - 1] == '/' ? "" : "/",
			    ents[i]->d_name);
			r = add_file(s, buf);
		}
		free(ents[i]);
	}
	free(ents);
	return r;
}

/*
 * Where {"$env": NAME} may stand: in the secrets only, whose values the
 * API never shows (so that a document cannot have the CI runner print a
 * variable of its environment as a name in the plan or an error).
 */
static int
secret_path(const char *path)
{
	static const char *const res[] = {
	    "^agents\\[[0-9]+\\]\\.auth\\.(token|password|secret)$",
	    "^schedules\\[[0-9]+\\]\\.target\\.(headers|env)\\.[^.]+$", NULL};
	static regex_t rx[2];
	static int compiled;

	for (int i = 0; !compiled && res[i]; i++)
		if (regcomp(&rx[i], res[i], REG_EXTENDED | REG_NOSUB) != 0)
			fatalx("regcomp %s", res[i]);
	compiled = 1;
	for (int i = 0; res[i]; i++)
		if (regexec(&rx[i], path, 0, NULL, 0) == 0)
			return 1;
	return 0;
}

/*
 * Replaces every {"$env": "NAME"} under *v (path: where *v is, for the
 * message; depth: how deep) with NAME's value.  -1 after a message naming
 * file and path.
 */
static int
env_subst(json_t **v, const char *file, const char *path, int depth)
{
	char sub[512];
	const char *k, *name, *val;
	json_t *x;
	size_t i;

	if (depth > 64) {
		log_warnx("%s: %s: nested deeper than 64 levels", file, path);
		return -1;
	}
	if (json_is_object(*v) && json_object_size(*v) == 1 &&
	    (x = json_object_get(*v, "$env")) != NULL) {
		if (!secret_path(path)) {
			log_warnx("%s: %s: $env stands only for a secret (an "
			          "agent's auth token, password or secret, a "
			          "target's header or environment value)",
			    file, path);
			return -1;
		}
		if (!json_is_string(x)) {
			log_warnx("%s: %s: $env takes the name of an "
			          "environment variable",
			    file, path);
			return -1;
		}
		name = json_string_value(x);
		if ((val = getenv(name)) == NULL) {
			log_warnx("%s: %s: the environment variable %s is not "
			          "set",
			    file, path, name);
			return -1;
		}
		json_decref(*v);
		if ((*v = json_string(val)) == NULL) {
			log_warnx("%s: %s: %s is not UTF-8", file, path, name);
			return -1;
		}
		return 0;
	}
	if (json_is_object(*v)) {
		json_object_foreach(*v, k, x)
		{
			json_t *y = json_incref(x);

			snprintf(sub, sizeof(sub), "%s%s%s", path,
			    path[0] ? "." : "", k);
			if (env_subst(&y, file, sub, depth + 1) == -1) {
				json_decref(y);
				return -1;
			}
			json_object_set_new(*v, k, y);
		}
	} else if (json_is_array(*v)) {
		json_array_foreach(*v, i, x)
		{
			json_t *y = json_incref(x);

			snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
			if (env_subst(&y, file, sub, depth + 1) == -1) {
				json_decref(y);
				return -1;
			}
			json_array_set_new(*v, i, y);
		}
	}
	return 0;
}

/* Takes one document of file into the set.  -1 after a message. */
static int
take_doc(struct apply_set *s, const char *file, json_t *doc)
{
	const char *k;
	json_t *v;

	if (!json_is_object(doc)) {
		log_warnx("%s: expected a mapping of set, agents, pipelines "
		          "and schedules",
		    file);
		return -1;
	}
	json_object_foreach(doc, k, v)
	{
		int known = strcmp(k, "set") == 0;

		for (int i = 0; i < NLISTS; i++)
			known |= strcmp(k, lists[i]) == 0;
		if (!known) {
			log_warnx("%s: %s: unknown key (a file holds set, "
			          "agents, pipelines and schedules)",
			    file, k);
			return -1;
		}
	}
	if ((v = json_object_get(doc, "set")) != NULL) {
		if (!json_is_string(v)) {
			log_warnx("%s: set: expected a name", file);
			return -1;
		}
		if (s->set_file && strcmp(s->set, json_string_value(v)) != 0) {
			log_warnx(
			    "%s: set \"%s\", but %s says \"%s\": one apply "
			    "is one set",
			    file, json_string_value(v), s->set_file, s->set);
			return -1;
		}
		if (s->set_file == NULL) {
			s->set = json_string_value(v);
			s->set_file = file;
		}
	}
	for (int l = 0; l < NLISTS; l++) {
		json_t *list = json_object_get(doc, lists[l]), *item;
		json_t *out = json_object_get(s->body, lists[l]);
		size_t i;

		if (list == NULL)
			continue;
		if (!json_is_array(list)) {
			log_warnx("%s: %s: expected a list", file, lists[l]);
			return -1;
		}
		json_array_foreach(list, i, item)
		{
			char path[64];
			json_t *y = json_incref(item);
			struct origin *o;

			snprintf(path, sizeof(path), "%s[%zu]", lists[l], i);
			if (env_subst(&y, file, path, 0) == -1) {
				json_decref(y);
				return -1;
			}
			if (json_array_append_new(out, y) == -1 ||
			    (o = realloc(s->origins[l],
			         (s->norigins[l] + 1) * sizeof(*o))) == NULL)
				fatalx("out of memory");
			s->origins[l] = o;
			o[s->norigins[l]].file = file;
			o[s->norigins[l]].index = i;
			s->norigins[l]++;
		}
	}
	return 0;
}

/* Reads file into the set: JSON if it ends in .json, else YAML. */
static int
read_file(struct apply_set *s, const char *file, json_t **keep)
{
	char err[CV_ERRLEN];
	json_error_t je;
	json_t *docs;
	char *text;
	size_t i, n;
	const char *dot = strrchr(file, '.');
	json_t *d;

	if ((text = ctl_read_input("file", file)) == NULL)
		return -1;
	if (dot && strcmp(dot, ".json") == 0) {
		d = json_loads(text, JSON_REJECT_DUPLICATES, &je);
		if (d == NULL)
			snprintf(err, sizeof(err), "line %d, column %d: %s",
			    je.line, je.column, je.text);
		docs = d ? json_pack("[o]", d) : NULL;
	} else
		docs = yaml_to_json(text, strlen(text), err, sizeof(err));
	free(text);
	if (docs == NULL) {
		log_warnx("%s: %s", file, err);
		return -1;
	}
	*keep = docs; /* the documents' strings live as long as the set */
	if ((n = json_array_size(docs)) == 0) {
		log_warnx("%s: no document in it", file);
		return -1;
	}
	json_array_foreach(docs, i, d)
	{
		if (take_doc(s, file, d) == -1)
			return -1;
	}
	return 0;
}

/*
 * api.c's hook: the field of an error ("schedules[7].cron") as where it
 * is in the files ("b.yaml: schedules[1].cron"); NULL when it names no
 * document.
 */
static const char *
apply_where(const char *field, char *buf, size_t len)
{
	for (int l = 0; the_set && l < NLISTS; l++) {
		size_t n = strlen(lists[l]), i;
		const char *rest;
		char *end;

		if (strncmp(field, lists[l], n) != 0 || field[n] != '[')
			continue;
		errno = 0;
		i = strtoul(field + n + 1, &end, 10);
		if (errno || *end != ']' || i >= the_set->norigins[l])
			return NULL;
		rest = end + 1;
		snprintf(buf, len, "%s: %s[%zu]%s", the_set->origins[l][i].file,
		    lists[l], the_set->origins[l][i].index, rest);
		return buf;
	}
	return NULL;
}

/* Prints the changes of an apply's answer, and their counts. */
static void
show(const json_t *doc)
{
	const json_t *c = json_object_get(doc, "changes"), *x;
	const json_t *counts = json_object_get(doc, "counts");
	int dry = json_is_true(json_object_get(doc, "dry_run"));
	size_t i;

	json_array_foreach(c, i, x)
	{
		const char *act =
		    json_string_value(json_object_get(x, "action"));
		const char *id = json_string_value(json_object_get(x, "id"));
		const char *name =
		    json_string_value(json_object_get(x, "name"));

		printf("%-9s %-8s %s", act ? act : "?",
		    json_string_value(json_object_get(x, "kind"))
		        ? json_string_value(json_object_get(x, "kind"))
		        : "?",
		    name     ? name
		        : id ? id
		             : "?");
		if (name && id)
			printf(" (%s)", id);
		putchar('\n');
	}
	printf("%sset %s of %s: %lld %s, %lld %s, %lld unchanged, %lld %s\n",
	    dry ? "dry run, nothing changed: " : "",
	    json_string_value(json_object_get(doc, "set")),
	    json_string_value(json_object_get(doc, "owner")),
	    (long long)json_integer_value(json_object_get(counts, "create")),
	    dry ? "to create" : "created",
	    (long long)json_integer_value(json_object_get(counts, "update")),
	    dry ? "to update" : "updated",
	    (long long)json_integer_value(json_object_get(counts, "unchanged")),
	    (long long)json_integer_value(json_object_get(counts, "delete")),
	    dry ? "to delete" : "deleted");
}

enum { OPT_SET = 0x200, OPT_PRUNE, OPT_PRUNE_ALL, OPT_OWNER, OPT_PLAN };

/* Entry point of "cronvisorctl apply"; argv[0] is "apply". */
int
apply_main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"file", required_argument, NULL, 'f'},
	    {"set", required_argument, NULL, OPT_SET},
	    {"prune", no_argument, NULL, OPT_PRUNE},
	    {"prune-all", no_argument, NULL, OPT_PRUNE_ALL},
	    {"owner", required_argument, NULL, OPT_OWNER},
	    {"dry-run", no_argument, NULL, OPT_PLAN},
	    {"help", no_argument, NULL, 'h'}, CTL_GLOBAL_OPTIONS,
	    {NULL, 0, NULL, 0}};
	struct apply_set s;
	json_t *keep[APPLY_FILES_MAX] = {NULL}, *doc = NULL;
	const char *set_opt = NULL, *owner = NULL;
	char *prog = argv[0], name[] = "cronvisorctl apply";
	int c, prune = 0, rc = CTL_EXIT_FAIL, r;

	memset(&s, 0, sizeof(s));
	argv[0] = name;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:h", opts, NULL)) != -1) {
		if (c == 'f' && add_path(&s, optarg) == -1) {
			rc = CTL_EXIT_FAIL;
			goto out;
		} else if (c == OPT_SET)
			set_opt = optarg;
		else if (c == OPT_PRUNE)
			prune = 1;
		else if (c == OPT_PRUNE_ALL)
			prune = 2;
		else if (c == OPT_OWNER)
			owner = optarg;
		else if (c == OPT_PLAN)
			ctl.dry_run = 1;
		else if (c == 'h') {
			usage(stdout);
			rc = CTL_EXIT_OK;
			goto out;
		} else if (c != 'f' && !ctl_global_option(c, optarg)) {
			rc = CTL_EXIT_USAGE;
			goto out;
		}
	}
	if (optind < argc) {
		rc = ctl_usage_error("apply: unexpected argument \"%s\" (files "
		                     "go after -f)",
		    argv[optind]);
		goto out;
	}
	if (s.nfiles == 0) {
		rc = ctl_usage_error("apply needs -f FILE or -f DIR");
		goto out;
	}
	if ((s.body = json_pack("{s:[], s:[], s:[]}", "agents", "pipelines",
	         "schedules")) == NULL)
		fatalx("out of memory");
	for (size_t i = 0; i < s.nfiles; i++)
		if (read_file(&s, s.files[i], &keep[i]) == -1)
			goto out;
	if (set_opt)
		s.set = set_opt;
	if (s.set == NULL) {
		log_warnx("name the set: --set NAME, or set: NAME in the "
		          "files");
		goto out;
	}
	if (prune == 1 && s.norigins[0] + s.norigins[1] + s.norigins[2] == 0) {
		log_warnx("the files name nothing: --prune would delete the "
		          "whole set %s; --prune-all means that",
		    s.set);
		goto out;
	}
	api_set(s.body, "set", json_string(s.set));
	api_set(s.body, "prune", json_boolean(prune != 0));
	/* --dry-run asks the API for its plan: the apply is sent, undone. */
	api_set(s.body, "dry_run", json_boolean(ctl.dry_run));
	ctl.dry_run = 0;
	the_set = &s;
	api_field_where = apply_where;
	{
		const struct api_query q[] = {{"owner", owner}};

		r = api_request_json(
		    "POST", "/apply", q, 1, s.body, NULL, &doc);
	}
	api_field_where = NULL;
	the_set = NULL;
	rc = api_output(r, doc, show);
out:
	argv[0] = prog;
	json_decref(s.body);
	for (int l = 0; l < NLISTS; l++)
		free(s.origins[l]);
	for (size_t i = 0; i < s.nfiles; i++) {
		free(s.files[i]);
		json_decref(keep[i]);
	}
	api_cleanup();
	return rc;
}
