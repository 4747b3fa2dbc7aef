/*
 * cgroup.c: a cgroup of its own for every run, where the supervisor was
 * given a cgroup v2 subtree (systemd's Delegate=yes, as the packaged unit
 * asks), and nothing where it was not: rlimits (target.c) then remain the
 * only limits.  rlimits are per process, and RLIMIT_NPROC counts the
 * processes of a user, which binds nothing for root; a cgroup counts and
 * limits the run's whole tree: memory.max, pids.max, and cpu.max (one CPU)
 * when the cpu controller is there.
 *
 * The layout, under the supervisor's delegated cgroup D: the supervisor
 * moves itself into D/supervisor at its start (a cgroup with children may
 * hold no process: the "no internal processes" rule), enables the
 * controllers for D's children, and each run gets D/run-<run id>.  The
 * runner child (forked by the supervisor or the runner helper, both in
 * D/supervisor) makes its cgroup, writes the limits and moves itself in
 * before it starts the target, which inherits it; so nothing but the
 * leaf's name tells a runner where D is, and the runner helper needs no
 * word from the supervisor.  The supervisor removes the cgroup once it has
 * reaped the runner: an empty cgroup goes with rmdir; one that still holds
 * processes (a grandchild that escaped the runner's tree kill) is killed
 * through cgroup.kill (Linux 5.14) and removed at a later reap.
 *
 * Only a cgroup that was handed over is divided: systemd (251 and later)
 * marks a delegated cgroup with the extended attribute trusted.delegate
 * (user.delegate under a user manager).  Root may write any cgroup, and a
 * supervisor started by hand from a login session must not rearrange the
 * session's scope behind systemd's back.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "runner.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define CGROUP_LEAF    "supervisor"    /* where the supervisor moves itself */
#define CGROUP_PREFIX  "run-"          /* a run's cgroup: run-<run id> */
#define CGROUP_PENDING 64              /* cgroups left to remove, at most */
#define CGROUP_CPU     "100000 100000" /* cpu.max: one CPU per run */

/* Set by cgroup_setup(): D, when runs get cgroups; "" when not. */
static char cgroup_base[PATH_MAX];
/* Run cgroups that still held processes when their runner was reaped. */
static char cgroup_pending[CGROUP_PENDING][RUN_ID_MAX];

/*
 * The cgroup v2 path of a process from the text of /proc/PID/cgroup: the
 * "0::/path" line.  Returns 0 with path set, -1 when there is none (a
 * cgroup v1 only system) or it does not fit.
 */
int
cgroup_self_path(const char *text, char *path, size_t len)
{
	const char *p = text, *end;

	while (p != NULL && *p != '\0') {
		end = strchr(p, '\n');
		if (strncmp(p, "0::/", 4) == 0) {
			size_t n = end ? (size_t)(end - p) - 3 : strlen(p + 3);

			if (n >= len)
				return -1;
			memcpy(path, p + 3, n);
			path[n] = '\0';
			return 0;
		}
		p = end ? end + 1 : NULL;
	}
	return -1;
}

/*
 * Whether a space-separated list of controllers (cgroup.controllers,
 * cgroup.subtree_control) holds name.
 */
int
cgroup_has(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') &&
		    (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
			return 1;
	return 0;
}

/* Reads up to len - 1 bytes of file dir/name into buf; -1 if it cannot. */
static int
cgroup_read(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	        (int)sizeof(path) ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* Writes text to the existing file dir/name; -1 with errno if it cannot. */
static int
cgroup_write(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	size_t len = strlen(text);
	int fd, e;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)) == -1)
		return -1;
	if (write(fd, text, len) != (ssize_t)len) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return close(fd);
}

/* This process's cgroup v2 path, if root is a cgroup2 mount; else -1. */
static int
cgroup_mine(const char *root, char *path, size_t len)
{
	char text[4096];
	struct statfs sf;

	if (statfs(root, &sf) == -1 || sf.f_type != CGROUP2_SUPER_MAGIC ||
	    cgroup_read("/proc/self", "cgroup", text, sizeof(text)) == -1)
		return -1;
	return cgroup_self_path(text, path, len);
}

/*
 * Whether cgroup directory dir was delegated to this process's service:
 * systemd's trusted.delegate or user.delegate attribute says "1".
 */
int
cgroup_delegated(const char *dir)
{
	static const char *const names[] = {
	    "trusted.delegate", "user.delegate"};
	char v[8];
	ssize_t n;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((n = getxattr(dir, names[i], v, sizeof(v))) == 1 &&
		    v[0] == '1')
			return 1;
	return 0;
}

/*
 * The supervisor's part, at its start, before it starts the runner
 * helper: root is where cgroup2 is mounted, self this process's cgroup
 * path there.  When that cgroup offers the memory and pids controllers
 * and may be written, moves this process into its leaf CGROUP_LEAF and
 * enables the controllers for the runs' cgroups, and returns 1; else
 * returns 0 and changes nothing (runs get rlimits only), with why in
 * why.  Run cgroups left by an earlier supervisor that are empty are
 * removed.
 */
int
cgroup_setup_at(const char *root, const char *self, char *why, size_t len)
{
	char base[PATH_MAX], leaf[PATH_MAX], ctl[512], pid[24];
	const char *slash;

	snprintf(
	    base, sizeof(base), "%s%s", root, strcmp(self, "/") ? self : "");
	/* Started again inside the leaf (an exec in place): its parent. */
	if ((slash = strrchr(base, '/')) != NULL &&
	    strcmp(slash + 1, CGROUP_LEAF) == 0)
		base[slash - base] = '\0';
	if (cgroup_read(base, "cgroup.controllers", ctl, sizeof(ctl)) == -1 ||
	    !cgroup_has(ctl, "memory") || !cgroup_has(ctl, "pids")) {
		snprintf(
		    why, len, "%s offers no memory and pids controllers", base);
		return 0;
	}
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (snprintf(leaf, sizeof(leaf), "%s/" CGROUP_LEAF, base) >=
	        (int)sizeof(leaf) ||
	    (mkdir(leaf, 0755) == -1 && errno != EEXIST) ||
	    cgroup_write(leaf, "cgroup.procs", pid) == -1 ||
	    cgroup_write(base, "cgroup.subtree_control", "+memory") == -1 ||
	    cgroup_write(base, "cgroup.subtree_control", "+pids") == -1) {
		snprintf(why, len, "cannot use %s: %s", base, strerror(errno));
		return 0;
	}
	if (cgroup_has(ctl, "cpu"))
		(void)cgroup_write(base, "cgroup.subtree_control", "+cpu");
	snprintf(cgroup_base, sizeof(cgroup_base), "%s", base);
	return 1;
}

/*
 * cgroup_setup_at() for this process, with cgroup2 mounted at root
 * (CGROUP_ROOT), when its cgroup was delegated to it; logs what it
 * decided.  Returns 1 when runs get cgroups.
 */
int
cgroup_setup(const char *root)
{
	char self[PATH_MAX], dir[PATH_MAX], why[PATH_MAX + 64];
	const char *slash;

	if (cgroup_mine(root, self, sizeof(self)) == -1) {
		log_info("runs get rlimits only: no cgroup v2 at %s", root);
		return 0;
	}
	/* The delegated cgroup: ours, or the parent of our leaf. */
	snprintf(dir, sizeof(dir), "%s%s", root, self);
	if ((slash = strrchr(dir, '/')) != NULL &&
	    strcmp(slash + 1, CGROUP_LEAF) == 0 && !cgroup_delegated(dir))
		dir[slash - dir] = '\0';
	if (!cgroup_delegated(dir)) {
		log_info("runs get rlimits only: cgroup %s was not delegated "
		         "(Delegate=yes)",
		    self);
		return 0;
	}
	if (!cgroup_setup_at(root, self, why, sizeof(why))) {
		log_info("runs get rlimits only: %s", why);
		return 0;
	}
	log_info("each run gets its own cgroup under %s", cgroup_base);
	return 1;
}

/* Writes the run's limits into its cgroup dir; -1 with errno. */
static int
cgroup_limits(const char *dir, const char *ctl, const struct run_limits *l)
{
	char mem[32], pids[32];

	if (l->memory_mb > 0)
		snprintf(mem, sizeof(mem), "%lld",
		    (long long)l->memory_mb * 1024 * 1024);
	else
		snprintf(mem, sizeof(mem), "max");
	/* The runner is in the cgroup too: one more than the run's own. */
	if (l->nproc > 0)
		snprintf(pids, sizeof(pids), "%lld", (long long)l->nproc + 1);
	else
		snprintf(pids, sizeof(pids), "max");
	if (cgroup_write(dir, "memory.max", mem) == -1 ||
	    cgroup_write(dir, "pids.max", pids) == -1)
		return -1;
	/* No swap past memory.max; absent without swap accounting. */
	if (l->memory_mb > 0)
		(void)cgroup_write(dir, "memory.swap.max", "0");
	if (cgroup_has(ctl, "cpu") &&
	    cgroup_write(dir, "cpu.max", CGROUP_CPU) == -1)
		return -1;
	return 0;
}

/*
 * The runner's part, in the child before the target starts: with self
 * this process's cgroup path under root, when it is a CGROUP_LEAF whose
 * parent hands memory and pids to its children (cgroup_setup_at() did
 * so), makes the run's cgroup beside it, writes the limits l and moves
 * this process into it.  Returns 1 when the run is in its cgroup, 0 when
 * runs get no cgroups here, -1 (errno set) when the cgroup could not be
 * made or entered: the run then has its rlimits only.
 */
int
cgroup_enter_at(const char *root, const char *self, const char *run_id,
    const struct run_limits *l)
{
	char base[PATH_MAX], dir[PATH_MAX], ctl[512];
	const char *slash = strrchr(self, '/');

	if (slash == NULL || strcmp(slash + 1, CGROUP_LEAF) != 0 ||
	    strchr(run_id, '/') != NULL || run_id[0] == '.')
		return 0;
	snprintf(base, sizeof(base), "%s%.*s", root, (int)(slash - self), self);
	if (cgroup_read(base, "cgroup.subtree_control", ctl, sizeof(ctl)) ==
	        -1 ||
	    !cgroup_has(ctl, "memory") || !cgroup_has(ctl, "pids"))
		return 0;
	if (snprintf(dir, sizeof(dir), "%s/" CGROUP_PREFIX "%s", base,
	        run_id) >= (int)sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((mkdir(dir, 0755) == -1 && errno != EEXIST) ||
	    cgroup_limits(dir, ctl, l) == -1 ||
	    cgroup_write(dir, "cgroup.procs", "0") == -1)
		return -1;
	return 1;
}

/* cgroup_enter_at() for this process, cgroup2 mounted at root. */
int
cgroup_enter(const char *root, const char *run_id, const struct run_limits *l)
{
	char self[PATH_MAX];

	if (cgroup_mine(root, self, sizeof(self)) == -1)
		return 0;
	return cgroup_enter_at(root, self, run_id, l);
}

/* Removes the cgroup of run_id; 0, or -1 when it still holds processes. */
static int
cgroup_rmdir(const char *run_id)
{
	char dir[PATH_MAX];

	if (snprintf(dir, sizeof(dir), "%s/" CGROUP_PREFIX "%s", cgroup_base,
	        run_id) >= (int)sizeof(dir))
		return 0;
	if (rmdir(dir) == 0 || errno == ENOENT)
		return 0;
	if (errno == EBUSY)
		(void)cgroup_write(dir, "cgroup.kill", "1");
	return -1;
}

/*
 * The supervisor's part once it has reaped the runner of run_id: removes
 * the run's cgroup, if runs get cgroups here.  A cgroup that still holds
 * processes gets them killed and is tried again at the next call (up to
 * CGROUP_PENDING such; past that it is logged and left).
 */
void
cgroup_remove(const char *run_id)
{
	int i, slot = -1;

	if (cgroup_base[0] == '\0')
		return;
	for (i = 0; i < CGROUP_PENDING; i++) {
		if (cgroup_pending[i][0] == '\0') {
			if (slot == -1)
				slot = i;
			continue;
		}
		if (cgroup_rmdir(cgroup_pending[i]) == 0)
			cgroup_pending[i][0] = '\0';
	}
	if (cgroup_rmdir(run_id) == 0)
		return;
	if (slot == -1) {
		log_warnx(
		    "run %s: its cgroup still holds processes; left", run_id);
		return;
	}
	snprintf(
	    cgroup_pending[slot], sizeof(cgroup_pending[slot]), "%s", run_id);
}
