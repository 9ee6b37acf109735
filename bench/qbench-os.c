/*
 * What every back end of qbench calls: paths, writes, syncs and child
 * processes, each of which succeeds whole or ends qbench with a line
 * saying why, so that no measurement goes on past a step that failed.
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <sys/wait.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qbench.h"

extern char **environ;

/* snprintf into buf[size], or die: a cut path would name another file. */
void
pathf(char *buf, size_t size, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, size, f, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size)
		errx(1, "name too long: %s", buf);
}

void
write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "write");
		}
		if (w == 0)
			errx(1, "write: no progress");
		p += w;
		n -= (size_t)w;
	}
}

void
sync_or_die(int fd, int dir)
{
	int r;

	do
		r = dir ? fsync(fd) : fdatasync(fd);
	while (r == -1 && errno == EINTR);
	if (r == -1)
		err(1, "fsync");
}

char *
which(const char *prog)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save, buf[PATH_MAX];

	if (path == NULL)
		path = "/usr/bin:/bin";
	if ((copy = strdup(path)) == NULL)
		err(1, "strdup");
	for (dir = strtok_r(copy, ":", &save); dir != NULL;
	    dir = strtok_r(NULL, ":", &save)) {
		pathf(buf, sizeof(buf), "%s/%s", dir, prog);
		if (access(buf, X_OK) == 0) {
			free(copy);
			return strdup(buf);
		}
	}
	free(copy);
	return NULL;
}

/* The command's path in -b's directory (the caller never frees it). */
char *
cmd_path(const char *name)
{
	char buf[PATH_MAX], *p;

	pathf(buf, sizeof(buf), "%s/%s", opt.bindir, name);
	if ((p = strdup(buf)) == NULL)
		err(1, "strdup");
	return p;
}

/*
 * fork, exec, wait: what a shell pays for each command, and exactly what
 * the spawn floor measures.  The child's stdin is in, its stdout out.
 */
pid_t
start(char *const argv[], char *const envp[], int in, int out)
{
	pid_t pid;

	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0) {
		if (dup2(in, 0) == -1 || dup2(out, 1) == -1)
			_exit(126);
		execve(argv[0], argv, envp != NULL ? envp : environ);
		_exit(127);
	}
	return pid;
}

/* Start argv on pipes, as a client. */
struct client *
client_start(char *const argv[])
{
	struct client *c;
	int in[2], out[2];

	if ((c = calloc(1, sizeof(*c))) == NULL)
		err(1, "calloc");
	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1)
		err(1, "pipe2");
	(void)start(argv, NULL, in[0], out[1]);
	(void)close(in[0]);
	(void)close(out[1]);
	if ((c->to = fdopen(in[1], "w")) == NULL ||
	    (c->from = fdopen(out[0], "r")) == NULL)
		err(1, "fdopen");
	return c;
}

/* Write k; wait for k back; both. */
void
client_send(struct sys *s, struct client *c, long k)
{
	if (fprintf(c->to, "%ld\n", k) < 0 || fflush(c->to) == EOF)
		err(1, "%s: write", s->name);
}

void
client_wait(struct sys *s, struct client *c, long k)
{
	char line[32];

	if (fgets(line, sizeof(line), c->from) == NULL ||
	    strtol(line, NULL, 10) != k)
		errx(1, "%s: its client did not do its %ld jobs", s->name, k);
}

void
client_ask(struct sys *s, struct client *c, long k)
{
	client_send(s, c, k);
	client_wait(s, c, k);
}

int
reap(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			err(1, "waitpid");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void
run_ok(char *const argv[], char *const envp[], int in)
{
	int st = reap(start(argv, envp, in, devnull));

	if (st != 0)
		errx(1, "%s exited %d", argv[0], st);
}

/* Run argv, its stdout read into out (NUL-terminated); must exit 0. */
size_t
run_read(char *const argv[], int in, char *out, size_t size)
{
	size_t len = 0;
	ssize_t r;
	pid_t pid;
	int p[2], st;

	if (pipe2(p, O_CLOEXEC) == -1)
		err(1, "pipe");
	pid = start(argv, NULL, in, p[1]);
	(void)close(p[1]);
	for (;;) {
		if ((r = read(p[0], out + len, size - 1 - len)) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "read");
		}
		if (r == 0)
			break;
		if ((len += (size_t)r) == size - 1)
			errx(1, "%s: output too long", argv[0]);
	}
	out[len] = '\0';
	(void)close(p[0]);
	if ((st = reap(pid)) != 0)
		errx(1, "%s exited %d", argv[0], st);
	return len;
}

/* A pipe holding text, for a child's stdin (it fits in the pipe). */
int
stdin_of(const char *text, size_t len)
{
	int p[2];

	if (len >= 65536)
		errx(1, "stdin text too long");
	if (pipe2(p, O_CLOEXEC) == -1)
		err(1, "pipe");
	write_all(p[1], text, len);
	(void)close(p[1]);
	return p[0];
}

/* The system's own directory under -w, by its name. */
void
sys_dir(struct sys *s)
{
	pathf(s->dir, sizeof(s->dir), "%s/%s", opt.workdir, s->name);
	if (mkdir(s->dir, 0777) == -1 && errno != EEXIST)
		err(1, "%s", s->dir);
}

int
open_dir(const char *dir, const char *rel)
{
	char path[PATH_MAX];
	int fd;

	pathf(path, sizeof(path), "%s/%s", dir, rel);
	if (mkdir(path, 0777) == -1 && errno != EEXIST)
		err(1, "%s", path);
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		err(1, "%s", path);
	return fd;
}

/* A part of a turn's cycles: "LABEL,SYSTEM.PART,ROUND,CYCLES,SECONDS,...". */
void
phase(struct sys *s, const char *part, long cycles, double secs, long fsyncs)
{
	printf("%s,%s.%s,%d,%ld,%.9f,%ld,-1\n", opt.label, s->name, part,
	    s->round, cycles, secs, fsyncs);
}
