/*
 * apply.c: the body of POST /apply (docs/apply.md), which makes a set of
 * agents, pipelines and schedules exist as written.  apply_parse() reads
 * it: the set's name, the flags, and each document with what names it in
 * the set (an agent's agent_id, a pipeline's pipeline_id, a schedule's
 * name) and the SHA-256 of its canonical text, which tells a changed
 * document from an unchanged one.  Each document is also checked by its
 * own parser here, so that an error names the list and the index as well
 * as the field ("schedules[2].interval_seconds").  Pure: no database.
 */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

static const char *const kind_lists[APPLY_KINDS] = {
    "agents", "pipelines", "schedules"};

/* A document of each kind, and what names it in its set. */
static const char *const kind_names[APPLY_KINDS] = {
    "agent", "pipeline", "schedule"};
static const char *const key_names[APPLY_KINDS] = {
    "agent_id", "pipeline_id", "name"};

/* "schedules", "agents", ...: the body's member for kind k. */
const char *
apply_list_name(enum apply_kind k)
{
	return kind_lists[k];
}

/* A set's name: 1-100 of A-Z a-z 0-9 . _ - (it goes into logs and
 * filters as it is). */
int
apply_set_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > APPLY_SET_MAX)
		return 0;
	return strspn(s,
	           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	           "0123456789._-") == n;
}

/* The SHA-256 of doc's canonical text (sorted keys, compact), in hex. */
static int
doc_hash(json_t *doc, char out[APPLY_HASH_LEN + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char *text =
	    json_dumps(doc, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);

	if (text == NULL)
		return -1;
	if (EVP_Digest(text, strlen(text), md, &mdlen, EVP_sha256(), NULL) !=
	        1 ||
	    mdlen * 2 != APPLY_HASH_LEN) {
		free(text);
		return -1;
	}
	free(text);
	for (unsigned int i = 0; i < mdlen; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/*
 * Prefixes e->field with where the document doc is ("schedules[2]"), and
 * the message with its name when it has one as a string.
 */
static int
at_item(struct schedule_error *e, enum apply_kind k, size_t i, json_t *doc)
{
	static const char *const seed_keys[APPLY_KINDS] = {NULL, "id", NULL};
	const char *name =
	    json_string_value(json_object_get(doc, key_names[k]));
	char f[sizeof(e->field)], m[sizeof(e->message)];

	if (name == NULL && seed_keys[k])
		name = json_string_value(json_object_get(doc, seed_keys[k]));
	if (name &&
	    snprintf(m, sizeof(m), "%s \"%s\": %s", kind_names[k], name,
	        e->message) >= 0)
		memcpy(e->message, m, sizeof(m));

	/* A path too long for the field ends where it ends. */
	if (snprintf(f, sizeof(f), "%s[%zu]%s%s", kind_lists[k], i,
	        e->field[0] ? "." : "", e->field) < 0)
		f[0] = '\0';
	memcpy(e->field, f, sizeof(f));
	return -1;
}

/*
 * Checks an agent's document as a create would, but for its secret: one
 * left out (or "***") may be the stored agent's to keep, which the
 * update decides.  0 with *ad, or -1 with *e.
 */
static int
agent_check(json_t *doc, const char *text, struct agent_doc *ad,
    struct schedule_error *e)
{
	json_t *auth = json_object_get(doc, "auth"), *copy, *v;
	const char *member =
	    agent_secret_name(json_string_value(json_object_get(auth, "type")));
	char *t;
	int r;

	if (member == NULL || !json_is_object(auth) ||
	    ((v = json_object_get(auth, member)) != NULL &&
	        !(json_is_string(v) &&
	            strcmp(json_string_value(v), "***") == 0)))
		return agent_parse(text, strlen(text), ad, e);
	/* A stand-in secret: the rest is checked as it is. */
	if ((copy = json_deep_copy(doc)) == NULL ||
	    json_object_set_new(json_object_get(copy, "auth"), member,
	        json_string("stand-in")) == -1 ||
	    (t = json_dumps(copy, JSON_COMPACT)) == NULL) {
		json_decref(copy);
		return doc_fail(e, "internal", NULL, "out of memory");
	}
	json_decref(copy);
	r = agent_parse(t, strlen(t), ad, e);
	free(t);
	return r;
}

/*
 * Checks item i of list k with the document's own parser and sets its key
 * (the name it has in the set).  0, or -1 with *e.
 */
static int
check_item(json_t *doc, enum apply_kind k, struct apply_item *it,
    struct schedule_error *e)
{
	struct schedule_doc sd;
	struct agent_doc ad;
	char *text;
	json_t *p;
	int r = -1;

	if (!json_is_object(doc))
		return doc_fail(e, "invalid_field", NULL, "expected an object");
	if ((text = json_dumps(doc, JSON_COMPACT)) == NULL)
		return doc_fail(e, "internal", NULL, "out of memory");
	switch (k) {
	case APPLY_AGENT:
		if (agent_check(doc, text, &ad, e) == 0) {
			it->key = strdup(ad.agent_id);
			agent_clear(&ad);
			r = 0;
		}
		break;
	case APPLY_PIPELINE:
		if ((p = pipeline_parse(text, strlen(text), NULL, e)) != NULL) {
			it->key = strdup(json_string_value(
			    json_object_get(p, "pipeline_id")));
			json_decref(p);
			r = 0;
		}
		break;
	case APPLY_SCHEDULE:
		if (schedule_parse(text, strlen(text), &sd, e) == 0) {
			it->key = strdup(sd.name);
			schedule_clear(&sd);
			r = 0;
		}
		break;
	default:
		break;
	}
	free(text);
	if (r == 0 && it->key == NULL)
		return doc_fail(e, "internal", NULL, "out of memory");
	return r;
}

/* Reads list k of root (absent: empty) into out.  0, or -1 with *e. */
static int
read_list(json_t *root, enum apply_kind k, struct apply_req *out,
    struct schedule_error *e)
{
	json_t *list = json_object_get(root, kind_lists[k]), *doc;
	size_t i, j, n;

	if (list == NULL)
		return 0;
	if (!json_is_array(list))
		return doc_fail(e, "invalid_field", kind_lists[k],
		    "expected an array of documents");
	if ((n = json_array_size(list)) > APPLY_ITEMS_MAX)
		return doc_fail(e, "invalid_field", kind_lists[k],
		    "%zu documents; at most %d in one apply", n,
		    APPLY_ITEMS_MAX);
	if (n > 0 &&
	    (out->items[k] = calloc(n, sizeof(struct apply_item))) == NULL)
		return doc_fail(e, "internal", NULL, "out of memory");
	json_array_foreach(list, i, doc)
	{
		struct apply_item *it = &out->items[k][i];

		out->n[k] = i + 1;
		it->doc = doc;
		if (check_item(doc, k, it, e) == -1)
			return at_item(e, k, i, doc);
		if (doc_hash(doc, it->hash) == -1)
			return doc_fail(e, "internal", NULL, "out of memory");
		for (j = 0; j < i; j++)
			if (strcmp(out->items[k][j].key, it->key) == 0) {
				doc_fail(e, "duplicate", key_names[k],
				    "\"%s\" is named twice in the set",
				    it->key);
				return at_item(e, k, i, doc);
			}
	}
	return 0;
}

/*
 * Parses the body json[0..len) of POST /apply into *out (the caller's,
 * released with apply_clear() whatever this returns):
 *   {"set": NAME, "prune": BOOL, "dry_run": BOOL,
 *    "agents": [...], "pipelines": [...], "schedules": [...]}
 * 0, or -1 with *e naming the field.
 */
int
apply_parse(const char *json, size_t len, struct apply_req *out,
    struct schedule_error *e)
{
	const char *k;
	json_t *v;

	memset(out, 0, sizeof(*out));
	if ((out->root = doc_load(json, len, e)) == NULL)
		return -1;
	if (!json_is_object(out->root))
		return doc_fail(e, "invalid_json", NULL, "expected an object");
	json_object_foreach(out->root, k, v)
	{
		int known = strcmp(k, "set") == 0 || strcmp(k, "prune") == 0 ||
		    strcmp(k, "dry_run") == 0;

		for (int i = 0; i < APPLY_KINDS; i++)
			known |= strcmp(k, kind_lists[i]) == 0;
		if (!known)
			return doc_fail(e, "unknown_field", k,
			    "not a member of an apply (set, prune, dry_run, "
			    "agents, pipelines, schedules)");
		if ((strcmp(k, "prune") == 0 || strcmp(k, "dry_run") == 0) &&
		    !json_is_boolean(v))
			return doc_fail(
			    e, "invalid_field", k, "expected true or false");
	}
	v = json_object_get(out->root, "set");
	if (v == NULL)
		return doc_fail(e, "missing_field", "set",
		    "required: the name of the set these documents make up");
	if (!json_is_string(v) || !apply_set_ok(json_string_value(v)))
		return doc_fail(e, "invalid_field", "set",
		    "expected 1 to %d of A-Z, a-z, 0-9, '.', '_' and '-'",
		    APPLY_SET_MAX);
	out->set = json_string_value(v);
	out->prune = json_is_true(json_object_get(out->root, "prune"));
	out->dry_run = json_is_true(json_object_get(out->root, "dry_run"));
	for (int i = 0; i < APPLY_KINDS; i++)
		if (read_list(out->root, (enum apply_kind)i, out, e) == -1)
			return -1;
	return 0;
}

void
apply_clear(struct apply_req *r)
{
	for (int k = 0; k < APPLY_KINDS; k++) {
		for (size_t i = 0; i < r->n[k]; i++)
			free(r->items[k][i].key);
		free(r->items[k]);
	}
	json_decref(r->root);
	memset(r, 0, sizeof(*r));
}
