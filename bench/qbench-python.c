/*
 * lib-python: the job cycle from Python (python/spool), timed beside the
 * library's own, lib-spool, in row 3; py-work-j16, spool.work beside
 * spool-run -j 16, in row 11.  One interpreter runs
 * bench/pycycle.py for the whole run; a turn writes it K and waits for
 * K back, so only the cycles, not the interpreter's start, are timed.
 * -y names the interpreter, -Y the script; PYTHONPATH finds the package.
 */
#define _GNU_SOURCE
#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qbench.h"

struct py {
	FILE *to, *from;
};

/* Start PYTHON SCRIPT DIR MODE... on pipes. */
static void
python_start(struct py *p, char *dir, char *mode, char *arg)
{
	int in[2], out[2];
	char *argv[] = { (char *)opt.python, (char *)opt.pyscript, dir, mode,
	    arg, NULL };

	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1)
		err(1, "pipe2");
	(void)start(argv, NULL, in[0], out[1]);
	(void)close(in[0]);
	(void)close(out[1]);
	if ((p->to = fdopen(in[1], "w")) == NULL ||
	    (p->from = fdopen(out[0], "r")) == NULL)
		err(1, "fdopen");
}

/* Write k, wait for k back. */
static void
python_ask(struct sys *s, struct py *p, long k)
{
	char line[32];

	if (fprintf(p->to, "%ld\n", k) < 0 || fflush(p->to) == EOF)
		err(1, "%s: write", s->name);
	if (fgets(line, sizeof(line), p->from) == NULL ||
	    strtol(line, NULL, 10) != k)
		errx(1, "%s: %s did not do its %ld jobs", s->name,
		    opt.pyscript, k);
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
	struct py *p;
	char *init[] = { cmd_path("spool-init"), "-d", NULL, NULL };

	python_need(s);
	sys_dir(s);
	init[2] = s->dir;
	run_ok(init, NULL, devnull);
	if ((p = calloc(1, sizeof(*p))) == NULL)
		err(1, "calloc");
	python_start(p, s->dir, "cycle", NULL);
	s->st = p;
}

static void
python_op(struct sys *s, long k)
{
	python_ask(s, s->st, k);
}

/*
 * py-work-j16, in row 11 beside spool-run -j 16: spool.work with 16
 * threads and a no-op function draining k jobs enqueued untimed before,
 * as run-j16 drains them with a no-op program.  s->st is the library's
 * handle, for the enqueue; the one interpreter is here.
 */
static struct py work_py;

static void
python_work_init(struct sys *s)
{
	python_need(s);
	lib_spool_init(s);
	python_start(&work_py, s->dir, "work", "16");
}

static void
python_work_op(struct sys *s, long k)
{
	double t0;

	lib_enqueue_k(s, k);
	t0 = now_s();
	python_ask(s, &work_py, k);
	s->own_seconds = now_s() - t0;
}

static struct sys python_systems[] = {
	SYS("lib-python", python_init, python_op, 1, 100),
	{ .name = "py-work-j16", .init = python_work_init,
	    .op = python_work_op, .unit = 1, .k = 200, .procs = 16 },
	{ .name = NULL }
};

const struct backend python_backend = { "python", python_systems, NULL };
