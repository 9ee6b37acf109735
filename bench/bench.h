/* What the benchmark's drivers (qbench, depth) share. */
#ifndef BENCH_H
#define BENCH_H

#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spool.h"

/* Seconds on the monotonic clock. */
static inline double
now_s(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The fsyncs this process's library calls made so far. */
static inline unsigned long
fsyncs_now(void)
{
	struct spool_counters c;

	spool_get_counters(&c);
	return c.fsyncs;
}

/*
 * The number that what gives, from min to max, in digits (and a point,
 * if frac); anything else ends the program with one line and exit
 * status 100.
 */
static inline double
bench_number(const char *what, const char *s, double min, double max,
    int frac)
{
	char *end;
	double v;

	errno = 0;
	v = frac ? strtod(s, &end) : (double)strtoll(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 ||
	    strspn(s, frac ? "0123456789." : "0123456789") != strlen(s) ||
	    v < min || v > max)
		errx(100, "%s: bad number '%.40s' (%.15g to %.15g)", what, s, min,
		    max);
	return v;
}

#endif
