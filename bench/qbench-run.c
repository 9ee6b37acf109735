/*
 * Row 11: spool-run -j N with a no-op handler, draining jobs enqueued
 * untimed before it starts (--idle-exit 0: it exits once nothing is due
 * and no handler runs), beside that handler spawned with N in flight and
 * nothing else, and the library's part of -j 1.  A turn ends with no job
 * due, and every handler spawned has exited 0.
 */
#define _GNU_SOURCE
#include <err.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "qbench.h"

extern char **environ;

static char *run_cmd;

static void
run_init(struct sys *s)
{
	if (opt.truebin == NULL)
		errx(1, "%s needs -t TRUE", s->name);
	lib_spool_init(s);
	run_cmd = cmd_path("spool-run");
}

/* argv with stdin and stdout on /dev/null, and stderr too. */
static pid_t
start_quiet(char *const argv[])
{
	pid_t pid;

	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0) {
		if (dup2(devnull, 0) == -1 || dup2(devnull, 1) == -1 ||
		    dup2(devnull, 2) == -1)
			_exit(126);
		execve(argv[0], argv, environ);
		_exit(127);
	}
	return pid;
}

static void
run_op(struct sys *s, long k)
{
	struct spool_claim_opts opts = { 0, "bench" };
	char jobs[16];
	char *argv[] = { run_cmd, "-d", s->dir, "-j", jobs, "--idle-exit", "0",
	    "--", (char *)opt.truebin, NULL };
	double t0;
	size_t m;
	int st;

	lib_enqueue_k(s, k);
	pathf(jobs, sizeof(jobs), "%d", s->procs);
	t0 = now_s();
	if ((st = reap(start_quiet(argv))) != 0)
		errx(1, "spool-run exited %d", st);
	s->own_seconds = now_s() - t0;
	if (spool_claim(sys_spool(s), &opts, sys_leases(s), 1, &m) == -1)
		err(1, "spool_claim");
	if (m != 0)
		errx(1, "spool-run exited with jobs due");
}

/*
 * The no-op handler started as spool-run starts it, by vfork(2) and
 * execve(2), with stdin, stdout and stderr on /dev/null: so that the floor
 * is not a fork of qbench and its libraries, nor posix_spawn(3)'s reset
 * of every signal's handler.  spool-run's own steps, its process group and
 * its keeper, are not here.
 */
static pid_t
spawn_true(void)
{
	char *argv[] = { (char *)opt.truebin, NULL };
	pid_t pid;

	if ((pid = vfork()) == -1)
		err(1, "vfork");
	if (pid == 0) {
		if (dup2(devnull, 0) != -1 && dup2(devnull, 1) != -1 &&
		    dup2(devnull, 2) != -1)
			execve(opt.truebin, argv, environ);
		_exit(127);
	}
	return pid;
}

/* Wait for pid, or for any child if -1: the no-op, which must exit 0. */
static void
reap_true(pid_t pid)
{
	int st;

	if ((st = reap(pid)) != 0)
		errx(1, "%s exited %d", opt.truebin, st);
}

/*
 * The library's part of spool-run -j 1: a job at a time, the handler
 * spawned as spawn_true spawns it, then its finish and the next claim in
 * one spool_finish_claim, as the runner makes them.  What spool-run adds
 * to this is its own: the job's files, its log line, its poll, its keeper.
 */
static void
lib_j1_op(struct sys *s, long k)
{
	struct spool_claim_opts opts = { 0, "bench" };
	struct spool *sp = sys_spool(s);
	struct spool_finish f;
	struct spool_lease l[2];
	size_t m;
	double t0;
	long i, done = 0;

	lib_enqueue_k(s, k);
	t0 = now_s();
	if (spool_claim(sp, &opts, &l[0], 1, &m) == -1)
		err(1, "spool_claim");
	for (i = 0; m == 1; i ^= 1) {
		reap_true(spawn_true());
		memset(&f, 0, sizeof(f));
		f.id = l[i].id;
		f.token = l[i].token;
		f.outcome = SPOOL_OK;
		if (spool_finish_claim(sp, &f, 1, &opts, &l[i ^ 1], 1,
		    &m) == -1 || f.res.status != 0)
			err(1, "spool_finish_claim");
		spool_free_leases(&l[i], 1);
		done++;
	}
	s->own_seconds = now_s() - t0;
	if (done != k)
		errx(1, "%ld jobs done, not %ld", done, k);
}

/* The handler spawned with s->procs in flight, nothing else. */
static void
spawn_many_op(struct sys *s, long k)
{
	long started = 0, ended = 0;

	while (ended < k) {
		while (started < k && started - ended < s->procs) {
			(void)spawn_true();
			started++;
		}
		reap_true(-1);
		ended++;
	}
}

static struct sys runs[] = {
	{ .name = "run-j16", .init = run_init, .op = run_op, .unit = 1,
	    .k = 200, .procs = 16 },
	{ .name = "run-j1", .init = run_init, .op = run_op, .unit = 1,
	    .k = 100, .procs = 1 },
	{ .name = "lib-j1", .init = run_init, .op = lib_j1_op, .unit = 1,
	    .k = 100, .procs = 1 },
	{ .name = "spawn-16", .init = spawn_init, .op = spawn_many_op,
	    .unit = 1, .k = 200, .procs = 16 },
	{ .name = "spawn-1", .init = spawn_init, .op = spawn_many_op,
	    .unit = 1, .k = 100, .procs = 1 },
	{ .name = NULL }
};

const struct backend run_backend = { "spool-run", runs, NULL };
