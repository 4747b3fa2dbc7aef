/*
 * runuser.c: the Unix user an owner's runs are run as when its schedule
 * names none (an admin's target.run_as names one).  The configuration maps
 * owners to users with run_users ("owner:user,owner:user"; an owner may
 * hold ':' but not ',', since an element is cut at its last ':') and gives
 * every other owner run_user_default ("" = none).  Neither may name root:
 * a command runs as root only when an admin's schedule says so.  The API
 * refuses an exec target of an owner this gives no user (403), and the
 * supervisor switches to the user it gives for every run (exec and HTTP)
 * when it runs as root; both ask runuser_for(), so they cannot disagree.
 * Whether the user exists is the supervisor's to find out, on its own host
 * (getpwnam()): the API may run elsewhere.
 */
#include <stdio.h>
#include <string.h>

#include "cronvisor.h"

/*
 * 1 if the n bytes at s are a user name the configuration may hold: 1 to
 * RUNUSER_NAME_MAX bytes of letters, digits, '_', '.', '-', not starting
 * with '-' or a digit (useradd's rule, less its '$'), and not "root".
 */
static int
runuser_name_ok(const char *s, size_t n)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyz"
	                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";

	if (n == 0 || n > RUNUSER_NAME_MAX || s[0] == '-' ||
	    (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strchr(ok, s[i]) == NULL || s[i] == '\0')
			return 0;
	return !(n == 4 && memcmp(s, "root", 4) == 0);
}

/* The length of s without blanks at either end; *s moves past leading ones. */
static size_t
runuser_trim(const char **s, size_t n)
{
	while (n > 0 && (**s == ' ' || **s == '\t')) {
		(*s)++;
		n--;
	}
	while (n > 0 && ((*s)[n - 1] == ' ' || (*s)[n - 1] == '\t'))
		n--;
	return n;
}

/*
 * Cuts element [e, e + n) of a run_users list into owner and user (both
 * trimmed).  Returns 0, or -1 if it has no ':' or an empty owner.
 */
static int
runuser_split(const char *e, size_t n, const char **owner, size_t *olen,
    const char **user, size_t *ulen)
{
	const char *colon = NULL;

	for (size_t i = 0; i < n; i++)
		if (e[i] == ':')
			colon = e + i;
	if (colon == NULL)
		return -1;
	*owner = e;
	*olen = runuser_trim(owner, (size_t)(colon - e));
	*user = colon + 1;
	*ulen = runuser_trim(user, n - (size_t)(colon + 1 - e));
	return *olen == 0 ? -1 : 0;
}

/*
 * Checks a configuration value: one user name or "" (pairs 0:
 * run_user_default), or a run_users list (pairs 1): "" or comma-separated
 * owner:user elements, each owner once.  Returns 0, or -1 with why set.
 */
int
runuser_check(const char *v, int pairs, char *why, size_t whylen)
{
	const char *e, *end, *o, *u, *o2, *u2;
	size_t n, olen, ulen, olen2, ulen2;

	if (!pairs) {
		n = strlen(v);
		if (n == 0 || runuser_name_ok(v, n))
			return 0;
		snprintf(why, whylen,
		    "not a user name (1-%d letters, digits, '_', '.', '-'; "
		    "not root)",
		    RUNUSER_NAME_MAX);
		return -1;
	}
	for (e = v; *v != '\0' && e != NULL; e = *end ? end + 1 : NULL) {
		end = strchrnul(e, ',');
		n = (size_t)(end - e);
		if (runuser_split(e, n, &o, &olen, &u, &ulen) == -1 ||
		    !runuser_name_ok(u, ulen)) {
			snprintf(why, whylen,
			    "element %.*s is not owner:user (a user name of "
			    "1-%d letters, digits, '_', '.', '-'; not root)",
			    (int)(n > 40 ? 40 : n), e, RUNUSER_NAME_MAX);
			return -1;
		}
		/* Each owner once: a second line for it would be ignored. */
		for (const char *p = v; p < e; p = strchrnul(p, ',') + 1) {
			if (runuser_split(p, (size_t)(strchrnul(p, ',') - p),
			        &o2, &olen2, &u2, &ulen2) == 0 &&
			    olen2 == olen && memcmp(o, o2, olen) == 0) {
				snprintf(why, whylen,
				    "owner %.*s is listed twice",
				    (int)(olen > 40 ? 40 : olen), o);
				return -1;
			}
		}
	}
	return 0;
}

/*
 * The user owner's runs are run as when the schedule names none: its
 * element of users (a run_users list, valid as runuser_check() says), else
 * def (run_user_default); owner NULL gets def.  Copies it into buf (len bytes,
 * at least RUNUSER_NAME_MAX + 1) and returns buf, or returns NULL when the
 * owner has none (not listed, def NULL or "").
 */
const char *
runuser_for(const char *users, const char *def, const char *owner, char *buf,
    size_t len)
{
	const char *e, *end, *o, *u;
	size_t olen, ulen;

	for (e = users; e != NULL && owner != NULL && *users != '\0';
	     e = *end ? end + 1 : NULL) {
		end = strchrnul(e, ',');
		if (runuser_split(e, (size_t)(end - e), &o, &olen, &u, &ulen) ==
		        0 &&
		    olen == strlen(owner) && memcmp(o, owner, olen) == 0 &&
		    ulen < len) {
			memcpy(buf, u, ulen);
			buf[ulen] = '\0';
			return buf;
		}
	}
	if (def == NULL || def[0] == '\0' || strlen(def) >= len)
		return NULL;
	memcpy(buf, def, strlen(def) + 1);
	return buf;
}
