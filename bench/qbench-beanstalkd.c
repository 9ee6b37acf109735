/*
 * beanstalkd's systems, over its text protocol on 127.0.0.1: a job's put,
 * reserve and delete, one client in row 3 and a client a worker in row
 * 10.  bench.sh runs the daemon with -f 0, its binlog fsync'd on every
 * write, and every reply is checked before the next command is sent.
 */
#define _GNU_SOURCE
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qbench.h"

struct bean {
	int sock;
	char in[4096];		/* what the daemon sent past the last line */
	size_t inlen;
};

/* A connection to -p PORT, waiting for a daemon that is just starting. */
static int
bean_connect(void)
{
	struct sockaddr_in sa;
	double give_up = now_s() + 10;
	int one = 1, sock;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)opt.bean_port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (;;) {
		if ((sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
		    0)) == -1)
			err(1, "socket");
		if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		if (now_s() > give_up)
			err(1, "beanstalkd on 127.0.0.1:%d", opt.bean_port);
		(void)close(sock);
		(void)usleep(20000);
	}
	(void)setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return sock;
}

void
bean_probe(void)
{
	if (opt.bean_port == 0)
		errx(1, "-P needs -p PORT");
	(void)close(bean_connect());
}

static void
bean_init(struct sys *s)
{
	struct bean *b;

	if (opt.bean_port == 0)
		errx(1, "%s needs -p PORT", s->name);
	if ((b = calloc(1, sizeof(*b))) == NULL)
		err(1, "calloc");
	b->sock = bean_connect();
	s->st = b;
}

static void
bean_teardown(struct sys *s)
{
	struct bean *b = s->st;

	(void)close(b->sock);
	free(b);
	s->st = NULL;
}

/* More bytes from the daemon into b->in. */
static void
bean_read(struct bean *b)
{
	ssize_t r;

	do
		r = read(b->sock, b->in + b->inlen, sizeof(b->in) - b->inlen);
	while (r == -1 && errno == EINTR);
	if (r <= 0)
		err(1, "beanstalkd: read");
	b->inlen += (size_t)r;
}

/* One reply line, without its \r\n; the bytes after it stay buffered. */
static void
bean_line(struct bean *b, char *line, size_t size)
{
	char *crlf;
	size_t n;

	while ((crlf = memmem(b->in, b->inlen, "\r\n", 2)) == NULL) {
		if (b->inlen == sizeof(b->in))
			errx(1, "beanstalkd: line too long");
		bean_read(b);
	}
	n = (size_t)(crlf - b->in);
	if (n >= size)
		errx(1, "beanstalkd: reply too long");
	memcpy(line, b->in, n);
	line[n] = '\0';
	memmove(b->in, crlf + 2, b->inlen - n - 2);
	b->inlen -= n + 2;
}

static void
bean_skip(struct bean *b, size_t n)
{
	while (b->inlen < n)
		bean_read(b);
	memmove(b->in, b->in + n, b->inlen - n);
	b->inlen -= n;
}

/* Send cmd; its reply must begin with want. */
static void
bean_say(struct bean *b, const char *cmd, const char *want)
{
	char line[256];

	write_all(b->sock, cmd, strlen(cmd));
	bean_line(b, line, sizeof(line));
	if (strncmp(line, want, strlen(want)) != 0)
		errx(1, "beanstalkd: %.*s: %s", (int)strcspn(cmd, "\r"), cmd,
		    line);
}

/* put, reserve, delete: beanstalkd's job cycle, each step's time added. */
static void
bean_cycle(struct bean *b, double t[3])
{
	char cmd[PAYLOAD_SIZE + 64], line[256];
	unsigned long long id, bytes;
	double t0;
	int n;

	t0 = now_s();
	n = snprintf(cmd, sizeof(cmd), "put 0 0 60 %d\r\n", PAYLOAD_SIZE);
	memcpy(cmd + n, payload, PAYLOAD_SIZE);
	memcpy(cmd + n + PAYLOAD_SIZE, "\r\n", 2);
	write_all(b->sock, cmd, (size_t)n + PAYLOAD_SIZE + 2);
	bean_line(b, line, sizeof(line));
	if (strncmp(line, "INSERTED ", 9) != 0)
		errx(1, "beanstalkd put: %s", line);
	t[P_ENQ] += now_s() - t0;
	t0 = now_s();
	write_all(b->sock, "reserve\r\n", 9);
	bean_line(b, line, sizeof(line));
	if (sscanf(line, "RESERVED %llu %llu", &id, &bytes) != 2)
		errx(1, "beanstalkd reserve: %s", line);
	bean_skip(b, bytes + 2);
	t[P_CLAIM] += now_s() - t0;
	t0 = now_s();
	n = snprintf(cmd, sizeof(cmd), "delete %llu\r\n", id);
	write_all(b->sock, cmd, (size_t)n);
	bean_line(b, line, sizeof(line));
	if (strcmp(line, "DELETED") != 0)
		errx(1, "beanstalkd delete: %s", line);
	t[P_FIN] += now_s() - t0;
}

/* beanstalkd's cycles, one job at a time. */
static void
bean_op(struct sys *s, long k)
{
	double t[3] = { 0, 0, 0 };
	long i;

	for (i = 0; i < k; i++)
		bean_cycle(s->st, t);
	phase(s, "enqueue", k, t[P_ENQ], -1);
	phase(s, "claim", k, t[P_CLAIM], -1);
	phase(s, "finish", k, t[P_FIN], -1);
}

/* Row 10: a client a worker, and a tube a P, named as its turn is. */
static void
many_bean_prep(struct sys *s)
{
	if (opt.bean_port == 0)
		errx(1, "%s needs -p PORT", s->name);
}

static void
many_bean_setup(struct sys *s)
{
	char cmd[128];
	struct bean *b;

	bean_init(s);
	b = s->st;
	pathf(cmd, sizeof(cmd), "use %s\r\n", s->name);
	bean_say(b, cmd, "USING ");
	pathf(cmd, sizeof(cmd), "watch %s\r\n", s->name);
	bean_say(b, cmd, "WATCHING ");
	bean_say(b, "ignore default\r\n", "WATCHING ");
}

static void
many_bean_cycle(struct sys *s)
{
	double t[3] = { 0, 0, 0 };

	bean_cycle(s->st, t);
}

static const struct many many_bean = {
	.name = "many-beanstalk", .prep = many_bean_prep,
	.setup = many_bean_setup, .cycle = many_bean_cycle,
	.teardown = bean_teardown
};

static struct sys beans[] = {
	SYS("lib-beanstalk", bean_init, bean_op, 1, 200),
	{ .name = NULL }
};

const struct backend beanstalkd_backend = { "beanstalkd", beans,
    &many_bean };
