/*
 * relay.c: what a handler of spool-run writes to stderr, moved on to the
 * worker's a line at a time, "ID: text", and its last bytes kept for the
 * detail of the delivery's finish (spool-run(1), "Handlers and the
 * worker").
 *
 * Invariant: a line of a handler's goes out in one write(2), whole or cut
 * at LINE_MAX_OUT bytes, so that several handlers' lines interleave
 * whole; the tail holds the last TAIL_MAX bytes read, whatever was
 * relayed.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

/*
 * The delivery's detail: why (if anything) and the end of the handler's
 * stderr, on one line, cut from the front to what the library keeps.
 */
void
relay_detail(const struct relay *s, const char *why, char *buf, size_t len)
{
	const char *t = s->tail;
	size_t n = s->ntail, off, i;

	while (n > 0 && isspace((unsigned char)t[n - 1]))
		n--;
	(void)snprintf(buf, len, "%s%s", why, why[0] != '\0' && n > 0 ?
	    ": " : "");
	off = strlen(buf);
	if (n > len - 1 - off) {
		t += n - (len - 1 - off);
		n = len - 1 - off;
	}
	for (i = 0; i < n; i++)
		buf[off + i] = t[i] == '\n' || t[i] == '\t' || t[i] == '\r' ?
		    ' ' : t[i];
	buf[off + n] = '\0';
}

static void
write_err(const char *p, size_t n)
{
	ssize_t r;

	while (n > 0) {
		if ((r = write(2, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			return;	/* our stderr is gone; the tail is still kept */
		}
		p += r;
		n -= (size_t)r;
	}
}

/*
 * One line of a handler's, on ours, after its job's ID: "ID: text".  It
 * goes in one write(2), so that the lines of several handlers interleave
 * whole, one event a line, as journald and syslog read them.
 */
static void
emit_line(const char *id, const char *p, size_t n)
{
	char buf[SPOOL_ID_MAX + 3 + LINE_MAX_OUT + 1];
	int k;

	k = snprintf(buf, sizeof(buf), "%s: ", id);
	memcpy(buf + k, p, n);
	buf[k + n] = '\n';
	write_err(buf, (size_t)k + n + 1);
}

/*
 * What a handler wrote, on ours, a line at a time; a line it has not
 * ended yet waits for its end, or for LINE_MAX_OUT bytes.
 */
static void
relay(struct relay *s, const char *id, const char *p, size_t n)
{
	const char *nl;
	size_t take;

	while (n > 0) {
		nl = memchr(p, '\n', n);
		take = nl != NULL ? (size_t)(nl - p) : n;
		if (take > sizeof(s->line) - s->nline)
			take = sizeof(s->line) - s->nline;
		memcpy(s->line + s->nline, p, take);
		s->nline += take;
		p += take;
		n -= take;
		if (n > 0 && *p == '\n') {
			p++;
			n--;
		} else if (n == 0)
			break;	/* the line goes on in the next read */
		emit_line(id, s->line, s->nline);
		s->nline = 0;
	}
}

/* The handler's last line, if it did not end it. */
void
relay_end(struct relay *s, const char *id)
{
	if (s->nline > 0)
		emit_line(id, s->line, s->nline);
	s->nline = 0;
}

static void
keep_tail(struct relay *s, const char *p, size_t n)
{
	size_t drop;

	if (n >= TAIL_MAX) {
		memcpy(s->tail, p + n - TAIL_MAX, TAIL_MAX);
		s->ntail = TAIL_MAX;
		return;
	}
	if (s->ntail + n > TAIL_MAX) {
		drop = s->ntail + n - TAIL_MAX;
		memmove(s->tail, s->tail + drop, s->ntail - drop);
		s->ntail -= drop;
	}
	memcpy(s->tail + s->ntail, p, n);
	s->ntail += n;
}

/*
 * Move what the handler wrote to stderr on to ours, keeping its tail.  At
 * most reads chunks, so a chatty handler cannot hold up the loop.
 */
void
relay_read(struct relay *s, const char *id, int reads)
{
	char buf[4096];
	ssize_t r;

	while (s->fd != -1 && reads-- > 0) {
		if ((r = read(s->fd, buf, sizeof(buf))) > 0) {
			relay(s, id, buf, (size_t)r);
			keep_tail(s, buf, (size_t)r);
			continue;
		}
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1 && errno == EAGAIN)
			return;
		if (r == -1)
			say("%s: handler's stderr: %s", id,
			    strerror(errno));
		(void)close(s->fd);	/* read end of a pipe */
		s->fd = -1;
	}
}
