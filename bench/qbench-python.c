/*
 * lib-python: the job cycle from Python (python/spool), timed beside the
 * library's own, lib-spool, in row 3; py-work-j16, spool.work beside
 * spool-run -j 16, in row 11.  One interpreter runs
 * bench/pycycle.py for the whole run, a client (qbench-os.c): a turn
 * writes it K and waits for K back, so only the cycles, not the
 * interpreter's start, are timed.
 * -y names the interpreter, -Y the script; PYTHONPATH finds the package.
 */
#define _GNU_SOURCE
#include <err.h>
#include <stdlib.h>

#include "qbench.h"

/* Start PYTHON SCRIPT DIR MODE [ARG]. */
static struct client *
python_start(char *dir, char *mode, char *arg)
{
	char *argv[] = { (char *)opt.python, (char *)opt.pyscript, dir, mode,
	    arg, NULL };

	return client_start(argv);
}

static void
python_need(struct sys *s)
{
	if (opt.python == NULL || opt.pyscript == NULL)
		errx(100, "%s: needs -y PYTHON and -Y SCRIPT", s->name);
}

static void
python_init(struct sys *s)
{
	python_need(s);
	made_spool(s);
	s->st = python_start(s->dir, "cycle", NULL);
}

static void
python_op(struct sys *s, long k)
{
	client_ask(s, s->st, k);
}

/*
 * py-work-j16, in row 11 beside spool-run -j 16: spool.work with 16
 * threads and a no-op function draining k jobs enqueued untimed before,
 * as run-j16 drains them with a no-op program.  s->st is the library's
 * handle, for the enqueue; the one interpreter is here.
 */
static struct client *work_py;

static void
python_work_init(struct sys *s)
{
	python_need(s);
	lib_spool_init(s);
	work_py = python_start(s->dir, "work", "16");
}

static void
python_work_op(struct sys *s, long k)
{
	double t0;

	lib_enqueue_k(s, k);
	t0 = now_s();
	client_ask(s, work_py, k);
	s->own_seconds = now_s() - t0;
}

static struct sys python_systems[] = {
	SYS("lib-python", python_init, python_op, 1, 100),
	{ .name = "py-work-j16", .init = python_work_init,
	    .op = python_work_op, .unit = 1, .k = 200, .procs = 16 },
	{ .name = NULL }
};

const struct backend python_backend = { "python", python_systems, NULL };
