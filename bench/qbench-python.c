/*
 * lib-python: the job cycle from Python (python/spool), timed beside the
 * library's own, lib-spool, in row 3.  One interpreter runs
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

static void
python_init(struct sys *s)
{
	int in[2], out[2];
	struct py *p;
	char *argv[] = { (char *)opt.python, (char *)opt.pyscript, NULL, NULL };
	char *init[] = { cmd_path("spool-init"), "-d", NULL, NULL };

	if (opt.python == NULL || opt.pyscript == NULL)
		errx(100, "%s: needs -y PYTHON and -Y SCRIPT", s->name);
	sys_dir(s);
	init[2] = argv[2] = s->dir;
	run_ok(init, NULL, devnull);
	if ((p = calloc(1, sizeof(*p))) == NULL)
		err(1, "calloc");
	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1)
		err(1, "pipe2");
	(void)start(argv, NULL, in[0], out[1]);
	(void)close(in[0]);
	(void)close(out[1]);
	if ((p->to = fdopen(in[1], "w")) == NULL ||
	    (p->from = fdopen(out[0], "r")) == NULL)
		err(1, "fdopen");
	s->st = p;
}

static void
python_op(struct sys *s, long k)
{
	struct py *p = s->st;
	char line[32];

	if (fprintf(p->to, "%ld\n", k) < 0 || fflush(p->to) == EOF)
		err(1, "%s: write", s->name);
	if (fgets(line, sizeof(line), p->from) == NULL ||
	    strtol(line, NULL, 10) != k)
		errx(1, "%s: %s did not finish its cycles", s->name,
		    opt.pyscript);
}

static struct sys python_systems[] = {
	SYS("lib-python", python_init, python_op, 1, 100),
	{ .name = NULL }
};

const struct backend python_backend = { "python", python_systems, NULL };
