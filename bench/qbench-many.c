/*
 * Row 10's turns: P workers on one queue, released at once, each looping
 * over the job cycle until a deadline.  A turn's rate counts only cycles
 * that ended by the deadline, over the window from the release to it, so
 * workers that stop late cannot stretch it; how late the last one stopped
 * (the tail) and the fewest and most cycles a worker made are told apart.
 */
#define _GNU_SOURCE
#include <sys/prctl.h>
#include <sys/socket.h>

#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qbench.h"

#define POOLS_MAX	8

/* To a worker: set up for a turn's data, or work until a deadline. */
struct order {
	int slot;		/* which of the pool's turns: its P's data */
	double until;		/* 0: set up only; else no cycle starts then */
};

struct reply {
	long cycles;		/* cycles that ended by the deadline */
	long all;		/* and those that ended after it */
	long fsyncs;		/* the library's, in the first */
	double end;		/* when the last cycle ended */
};

/* A many-* system's workers, forked once, as many as the largest P. */
struct pool {
	const struct many *m;
	struct sys *turn[PROCS_MAX];	/* its systems, one a P */
	int nturn;
	int n;				/* workers started */
	int fd[MANY_MAX];		/* qbench's end of each one's socket */
};

static struct pool pools[POOLS_MAX];
static int npools;
static int pool_fds[POOLS_MAX * MANY_MAX], npool_fds;

/*
 * The flush requests the device has completed: the 16th field after its
 * name in /proc/diskstats (Linux 5.5 on; the 15th is the time spent on
 * discards), or -1.
 */
static long long
flushes_now(void)
{
	char line[512], name[64], *p, *f, *end;
	long long v = -1;
	FILE *fp;
	int i;

	if (opt.flush_dev == NULL ||
	    (fp = fopen("/proc/diskstats", "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (sscanf(line, "%*u %*u %63s", name) != 1 ||
		    strcmp(name, opt.flush_dev) != 0)
			continue;
		p = strstr(line, name) + strlen(name);
		for (i = 0; (f = strtok(i == 0 ? p : NULL, " \n")) != NULL;
		    i++)
			if (i == 15) {
				v = strtoll(f, &end, 10);
				if (*end != '\0' || v < 0)
					v = -1;
				break;
			}
		break;
	}
	(void)fclose(fp);
	return v;
}

/* A whole message from the other end; 0 if it is gone. */
static int
recv_all(int fd, void *buf, size_t n)
{
	char *p = buf;
	ssize_t r;

	while (n > 0) {
		if ((r = read(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "read from a worker");
		}
		if (r == 0)
			return 0;
		p += r;
		n -= (size_t)r;
	}
	return 1;
}

/* Cycles until the deadline; a cycle counts if it ended by then. */
static void
work(const struct many *m, struct sys *w, double until, struct reply *r)
{
	unsigned long f0 = fsyncs_now();
	double t;

	memset(r, 0, sizeof(*r));
	do {
		m->cycle(w);
		t = now_s();
		r->all++;
		if (t <= until) {
			r->cycles++;
			r->fsyncs = (long)(fsyncs_now() - f0);
		}
	} while (t < until);
	r->end = t;
}

/*
 * A worker: on the data of one P at a time, set up untimed when a turn
 * at another P first asks for it.
 */
static void
worker_main(struct pool *pl, int fd)
{
	struct sys w;
	struct order o;
	struct reply r;
	int slot = -1;

	(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
	memset(&r, 0, sizeof(r));
	write_all(fd, &r, sizeof(r));
	while (recv_all(fd, &o, sizeof(o))) {
		if (o.slot != slot) {
			if (slot >= 0)
				pl->m->teardown(&w);
			w = *pl->turn[o.slot];
			pl->m->setup(&w);
			slot = o.slot;
		}
		if (o.until > 0)
			work(pl->m, &w, o.until, &r);
		write_all(fd, &r, sizeof(r));
	}
	if (slot >= 0)
		pl->m->teardown(&w);
	_exit(0);
}

/* Fork the pool's workers and wait until each has started. */
static void
pool_start(struct pool *pl, int n)
{
	struct reply r;
	pid_t pid;
	int sv[2], i;

	if (fflush(stdout) == EOF)
		err(1, "stdout");
	for (i = 0; i < n; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
			err(1, "socketpair");
		if ((pid = fork()) == -1)
			err(1, "fork");
		if (pid == 0) {
			while (npool_fds > 0)
				(void)close(pool_fds[--npool_fds]);
			(void)close(sv[0]);
			worker_main(pl, sv[1]);
		}
		(void)close(sv[1]);
		pl->fd[i] = pool_fds[npool_fds++] = sv[0];
	}
	for (i = 0; i < n; i++)
		if (!recv_all(pl->fd[i], &r, sizeof(r)))
			errx(1, "%s: a worker failed to start", pl->m->name);
	pl->n = n;
}

/* Send o to the turn's P workers; their replies into r[]. */
static void
order_all(struct sys *s, const struct order *o, struct reply *r)
{
	struct pool *pl = s->pool;
	int i;

	for (i = 0; i < s->procs; i++)
		write_all(pl->fd[i], o, sizeof(*o));
	for (i = 0; i < s->procs; i++)
		if (!recv_all(pl->fd[i], &r[i], sizeof(r[i])))
			errx(1, "%s: a worker died", s->name);
}

/* This P's data, fresh: no turn at another P has added to it. */
static void
many_init(struct sys *s)
{
	s->pool->m->prep(s);
}

/*
 * A turn, and beside its line one that says how it ended:
 *
 *	tail,LABEL,SYSTEM,ROUND,SECONDS,FEWEST,MOST,ALL
 *
 * the seconds from the deadline until the last worker stopped, the
 * fewest and most cycles a worker ended by the deadline, and the cycles
 * ended in all; and with -F, the device's flushes over the whole turn.
 */
static void
many_op(struct sys *s, long k)
{
	struct pool *pl = s->pool;
	struct reply r[MANY_MAX];
	struct order o;
	long long fl0, fl1;
	double t0, slice, end = 0;
	long n = 0, all = 0, f = 0, lo = -1, hi = 0;
	int i, max = 0;

	(void)k;
	if (pl->n == 0) {
		for (i = 0; i < opt.nprocs; i++)
			if (opt.procs[i] > max)
				max = opt.procs[i];
		pool_start(pl, max);
	}
	o.slot = s->slot;
	o.until = 0;
	order_all(s, &o, r);
	slice = opt.slice > 0 ? opt.slice : 3;
	fl0 = flushes_now();
	t0 = now_s();
	o.until = t0 + (s->round == 0 ? slice / 2 : slice);
	order_all(s, &o, r);
	fl1 = flushes_now();
	for (i = 0; i < s->procs; i++) {
		n += r[i].cycles;
		all += r[i].all;
		f += r[i].fsyncs;
		if (lo == -1 || r[i].cycles < lo)
			lo = r[i].cycles;
		if (r[i].cycles > hi)
			hi = r[i].cycles;
		if (r[i].end > end)
			end = r[i].end;
	}
	s->own_seconds = o.until - t0;
	s->ran = n;
	s->own_fsyncs = pl->m->counts ? f : -1;
	printf("tail,%s,%s,%d,%.9f,%ld,%ld,%ld\n", opt.label, s->name,
	    s->round, end - o.until, lo, hi, all);
	if (fl0 >= 0 && fl1 >= fl0)
		printf("flush,%s,%s,%d,%ld,%lld\n", opt.label, s->name,
		    s->round, all, fl1 - fl0);
}

/* The system of m's turns at P: many-NAME-pP, on data of its own. */
struct sys *
many_sys(const struct many *m, int procs)
{
	struct pool *pl;
	struct sys *s;
	char *name;
	int i;

	for (i = 0; i < npools && pools[i].m != m; i++)
		continue;
	if (i == npools) {
		if (npools == POOLS_MAX)
			errx(2, "too many systems of many workers");
		pools[npools++].m = m;
	}
	pl = &pools[i];
	if (pl->nturn == PROCS_MAX)
		errx(2, "%s: too many turns", m->name);
	if ((s = calloc(1, sizeof(*s))) == NULL)
		err(1, "calloc");
	if (asprintf(&name, "%s-p%d", m->name, procs) == -1)
		err(1, "asprintf");
	s->name = name;
	s->init = many_init;
	s->op = many_op;
	s->unit = 1;
	s->k = 1;
	s->fixed = 1;
	s->procs = procs;
	s->pool = pl;
	s->slot = pl->nturn;
	pl->turn[pl->nturn++] = s;
	return s;
}
