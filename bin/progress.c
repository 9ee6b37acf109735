/*
 * Progress on a terminal: one line on stderr, rewritten in place at most
 * four times a second, and erased before any message (say() does it) and
 * at the end.  Only while stderr is a terminal, and only where a command
 * turned it on for a long run: a pipe or a log never sees it.  It is only
 * a display: a failed write is let be.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define NS	1000000000LL

static struct {
	int on;
	int out_tty;		/* stdout is a terminal too */
	double hint;		/* the rate expected: a paced run's */
	int64_t start, shown;	/* monotonic ns */
	const char *what;	/* what is counted, as last shown */
	int width;		/* of the line on screen; 0: none */
} pg;

static int64_t
mono_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) == -1)
		return 0;
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/* Turn it on if want and stderr is a terminal; hint: jobs a second, or 0. */
void
progress_begin(int want, double hint)
{
	pg.on = want && isatty(2);
	pg.out_tty = isatty(1);
	pg.hint = hint;
	pg.start = mono_ns();
	pg.shown = 0;
	pg.what = NULL;
}

/*
 * done of total (0: not known yet) things, what they are (NULL: the
 * command's jobs).  A new kind of thing starts its own rate.  The first
 * and the last count are shown, and between them four a second.
 */
void
progress_show(const char *what, size_t done, size_t total)
{
	char line[200], count[64], rate_s[32] = "", eta_s[32] = "";
	int64_t now;
	double rate;
	long eta;
	int n;

	if (!pg.on)
		return;
	now = mono_ns();
	if (what != pg.what && (what == NULL || pg.what == NULL ||
	    strcmp(what, pg.what) != 0)) {
		pg.what = what;
		if (pg.shown != 0)
			pg.start = now;
		pg.shown = 0;
	}
	if (now - pg.shown < NS / 4 && done != total)
		return;
	pg.shown = now;
	/* The first starts at once: a paced rate is of the gaps after it. */
	if (pg.hint > 0)
		rate = done > 1 && now > pg.start ? (double)(done - 1) * NS /
		    (double)(now - pg.start) : pg.hint;
	else
		rate = now > pg.start ? (double)done * NS /
		    (double)(now - pg.start) : 0;
	if (rate > 0)
		(void)snprintf(rate_s, sizeof(rate_s), ", %.1f/s", rate);
	if (rate > 0 && total >= done && total > 0) {
		eta = (long)((double)(total - done) / rate + 0.5);
		(void)snprintf(eta_s, sizeof(eta_s), ", ETA %ldm%02lds",
		    eta / 60, eta % 60);
	}
	if (total > 0)
		(void)snprintf(count, sizeof(count), "%zu of %zu", done, total);
	else
		(void)snprintf(count, sizeof(count), "%zu", done);
	n = snprintf(line, sizeof(line), "\r%s: %s%s%s%s%s ", progname, count,
	    what != NULL ? " " : "", what != NULL ? what : "", rate_s, eta_s);
	if (n <= 0 || (size_t)n >= sizeof(line))
		return;
	if (n - 1 < pg.width)
		progress_erase();	/* else the new line covers the old */
	pg.width = n - 1;
	(void)!write(2, line, (size_t)n);
}

/* Before results on stdout: erase the line if they go to a terminal. */
void
progress_hide(void)
{
	if (pg.out_tty)
		progress_erase();
}

void
progress_erase(void)
{
	char line[200];
	int n;

	if (pg.width == 0)
		return;
	n = snprintf(line, sizeof(line), "\r%*s\r", pg.width, "");
	pg.width = 0;
	if (n > 0 && (size_t)n < sizeof(line))
		(void)!write(2, line, (size_t)n);
}
