/*
 * tree.c: finds every descendant of the runner and signals it.  A process
 * group is not enough to kill a run: a target may setsid() or setpgid()
 * its children away, or double-fork a daemon.  What it cannot escape is
 * the runner's being a child subreaper (PR_SET_CHILD_SUBREAPER): a
 * descendant whose parent dies is reparented to the runner, not to init,
 * so the parent links under /proc always lead back to us.  The scan reads
 * /proc/<pid>/stat of every process, keeps the parent links, and marks
 * the processes whose chain reaches the runner.  It races with processes
 * that fork while it reads; the callers repeat it (SIGKILL, reap, scan
 * again) until the runner has no child left, which the subreaper makes
 * the same as having no descendant left.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner.h"

/* One process seen under /proc. */
struct proc {
	pid_t pid;  /* its id */
	pid_t ppid; /* its parent's id */
	int zombie; /* 1: it is dead and waits to be reaped */
	int mine;   /* 1: a descendant of the runner */
};

/* The processes of one scan, sorted by pid. */
struct procs {
	struct proc *v; /* the processes */
	size_t n;       /* entries in v */
	size_t cap;     /* room in v */
};

/*
 * Reads the parent and state of one process from /proc/<pid>/stat.  The
 * command name in parentheses may hold spaces and parentheses, so the
 * fields are found after the last ')'.  Returns 0, or -1 if the process
 * is gone or the line is not understood.
 */
static int
proc_read(pid_t pid, struct proc *p)
{
	char path[64], line[512], *rp, state;
	ssize_t n;
	int fd, ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = io_read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	line[n] = '\0';
	if ((rp = strrchr(line, ')')) == NULL ||
	    sscanf(rp + 1, " %c %d", &state, &ppid) != 2)
		return -1;
	p->pid = pid;
	p->ppid = (pid_t)ppid;
	p->zombie = state == 'Z' || state == 'X';
	p->mine = 0;
	return 0;
}

/* Appends a process to ps; returns 0 or -1 (ENOMEM). */
static int
procs_add(struct procs *ps, const struct proc *p)
{
	struct proc *v;

	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 256;
		if ((v = realloc(ps->v, cap * sizeof(*v))) == NULL)
			return -1;
		ps->v = v;
		ps->cap = cap;
	}
	ps->v[ps->n++] = *p;
	return 0;
}

static int
proc_cmp(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Reads every process under /proc into ps, sorted by pid. */
static int
procs_scan(struct procs *ps)
{
	struct dirent *de;
	struct proc p;
	DIR *d;
	char *end;
	long pid;

	memset(ps, 0, sizeof(*ps));
	if ((d = opendir("/proc")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		pid = strtol(de->d_name, &end, 10);
		if (*end != '\0' || pid <= 0 || proc_read((pid_t)pid, &p) == -1)
			continue;
		if (procs_add(ps, &p) == -1) {
			closedir(d);
			free(ps->v);
			return -1;
		}
	}
	closedir(d);
	qsort(ps->v, ps->n, sizeof(*ps->v), proc_cmp);
	return 0;
}

/* Returns the entry of pid in ps, or NULL. */
static struct proc *
procs_find(struct procs *ps, pid_t pid)
{
	struct proc key = {.pid = pid};

	return bsearch(&key, ps->v, ps->n, sizeof(*ps->v), proc_cmp);
}

/*
 * Marks the descendants of self: a process is one if its parent is self
 * or a marked process.  Each pass marks at least one more generation, so
 * the passes stop after the depth of the tree.
 */
static void
procs_mark(struct procs *ps, pid_t self)
{
	struct proc *parent;
	int changed;

	do {
		changed = 0;
		for (size_t i = 0; i < ps->n; i++) {
			struct proc *p = &ps->v[i];
			if (p->mine || p->pid == self)
				continue;
			parent =
			    p->ppid == self ? NULL : procs_find(ps, p->ppid);
			if (p->ppid == self || (parent != NULL && parent->mine))
				p->mine = changed = 1;
		}
	} while (changed);
}

/*
 * Sends sig to the process group pgid (if > 0: the target's own group,
 * killed in one atomic call, which catches everything that stayed in it)
 * and then to every living descendant of the calling process found under
 * /proc.  SIGCONT follows a SIGTERM, so that a stopped process can act on
 * it.  Returns the number of living descendants seen (0: none is left but
 * zombies), or -1 if /proc could not be read.
 */
int
tree_signal(pid_t pgid, int sig)
{
	struct procs ps;
	int alive = 0;

	if (pgid > 0 && killpg(pgid, sig) == 0 && sig == SIGTERM)
		killpg(pgid, SIGCONT);
	if (procs_scan(&ps) == -1)
		return -1;
	procs_mark(&ps, getpid());
	for (size_t i = 0; i < ps.n; i++) {
		if (!ps.v[i].mine || ps.v[i].zombie)
			continue;
		alive++;
		if (sig != 0 && kill(ps.v[i].pid, sig) == 0 && sig == SIGTERM)
			kill(ps.v[i].pid, SIGCONT);
	}
	free(ps.v);
	return alive;
}

/*
 * Returns the number of living descendants of the calling process, or -1
 * if /proc could not be read.
 */
int
tree_count(void)
{
	return tree_signal(0, 0);
}
