/* What the benchmark's drivers (qbench, depth) share. */
#ifndef BENCH_H
#define BENCH_H

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

#endif
