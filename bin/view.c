/*
 * Times and jobs as people read them: ages, timestamps, a job's
 * disposition, and its fields as the inspection commands' JSON gives them.
 * One form each, so that spool-ls, spool-show and spool-stat agree.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

/*
 * A duration as a person gives it: 300ms, 30s, 5m, 2h, 7d, in the largest
 * unit that holds it exactly (1500ms stays 1500ms).
 */
const char *
fmt_duration(char *buf, size_t len, int64_t ms)
{
	static const struct {
		int64_t ms;
		const char *unit;
	} units[] = {
		{ 86400000, "d" }, { 3600000, "h" }, { 60000, "m" }, { 1000, "s" }
	};
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (ms >= units[i].ms && ms % units[i].ms == 0) {
			(void)snprintf(buf, len, "%" PRId64 "%s",
			    ms / units[i].ms, units[i].unit);
			return buf;
		}
	(void)snprintf(buf, len, "%" PRId64 "ms", ms);
	return buf;
}

/* A short age: 950ms, 42s, 7m12s, 3h04m, 2d05h; a time to come is 0ms. */
const char *
fmt_age(char *buf, size_t len, int64_t ms)
{
	int64_t s = ms / 1000;

	if (ms < 0)
		ms = s = 0;
	if (ms < 1000)
		(void)snprintf(buf, len, "%" PRId64 "ms", ms);
	else if (s < 60)
		(void)snprintf(buf, len, "%" PRId64 "s", s);
	else if (s < 3600)
		(void)snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", s / 60,
		    s % 60);
	else if (s < 86400)
		(void)snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m",
		    s / 3600, s / 60 % 60);
	else
		(void)snprintf(buf, len, "%" PRId64 "d%02" PRId64 "h",
		    s / 86400, s / 3600 % 24);
	return buf;
}

/* A time as the audit log writes it, 2026-11-30T08:12:16.301Z; "-": none. */
const char *
fmt_time(char *buf, size_t len, int64_t ms)
{
	return ms > 0 && spool_format_time(buf, len, ms) > 0 ? buf : "-";
}

/*
 * The columns a cell takes on a terminal: its characters, for a BY in
 * UTF-8 ("Jöns") is one column a character, not one a byte.  A wide
 * character (CJK) takes two, which this does not know.
 */
size_t
width(const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

const char *
dash(const char *s)
{
	return s != NULL && *s != '\0' ? s : "-";
}

/* parked, redriven, dropped, or "" (spool-ls(1), DISP). */
const char *
disposition(const struct spool_job_info *in)
{
	if (in->dropped)
		return "dropped";
	if (in->state == SPOOL_DEAD)
		return "parked";
	return in->redriven ? "redriven" : "";
}

/* Deliveries of the current cycle: "#3" in a listing. */
int
deliveries(const struct spool_job_info *in)
{
	size_t i;
	int n = 0;

	for (i = 0; i < in->ndeliveries; i++)
		n += in->deliveries[i].cycle == in->cycles;
	return n;
}

/*
 * What is wrong with a job that spool_job_info found damaged, for a
 * person; NULL if nothing is (spool-show(1)).
 */
const char *
damage_text(const struct spool_job_info *in)
{
	switch (in->damage) {
	case SPOOL_DAMAGE_MISSING:
		return "its file is not where its last record says";
	case SPOOL_DAMAGE_UNREADABLE:
		return "its file may not be read: a hand took its mode away";
	case SPOOL_DAMAGE_SIDECAR:
		return "its sidecar has a record that cannot be read";
	case SPOOL_DAMAGE_NONE:
		break;
	}
	if (in->payload_resized)
		return "its file is not the size its record says: edited by "
		    "hand, or torn";
	return NULL;
}

/* A job's fields, as spool-ls --json and spool-show --json give them. */
void
jjob(const struct spool_job_info *in, int64_t now)
{
	char sum[24];

	jstr("id", in->id);
	jstr("state", spool_state_name(in->state));
	jstr("disposition", disposition(in));
	jtime("since", in->since);
	jnum("age_ms", now - in->since);
	jtime("created", in->created);
	jtime("deadline", in->deadline);
	jtime("eligible", in->eligible);
	jtime("lease_until", in->lease_until);
	jstr("owner", in->owner);
	jstr("trace", in->trace);
	jstr("key", in->key);
	jnum("token", (int64_t)in->token);
	jnum("attempts", in->attempts);
	jnum("max_attempts", in->max_attempts);
	jnum("deliveries", deliveries(in));
	jnum("cycles", in->cycles);
	jstr("reason", in->reason ? spool_reason_name(in->reason) : NULL);
	jstr("class", in->class ? spool_class_name(in->class) : NULL);
	jstr("detail", in->detail);
	jbool("side_effect", in->side_effect);
	jbool("redriven", in->redriven);
	jbool("dropped", in->dropped);
	jstr("by", in->by);
	jstr("note", in->note);
	jtime("acted", in->acted);
	if (in->payload_xxh3 != 0) {
		(void)snprintf(sum, sizeof(sum), "%016" PRIx64,
		    in->payload_xxh3);
		jnum("payload_size", (int64_t)in->payload_size);
		jstr("payload_xxh3", sum);
	} else {
		jstr("payload_size", NULL);
		jstr("payload_xxh3", NULL);
	}
	jbool("damaged", in->payload_resized || in->damage != 0);
	jstr("damage", damage_text(in));
}

/*
 * n bytes as a person reads them: 512, 1.9K, 16M, 2.0G.  A value that
 * would round to 1024 of a unit is the next unit: 1.0M, not 1024K.
 */
void
fmt_size(char *buf, size_t len, uint64_t n)
{
	static const char units[] = "KMGTPE";
	double v = (double)n;
	int u = -1;

	while (v >= 1023.5 && units[u + 1] != '\0') {
		v /= 1024;
		u++;
	}
	if (u < 0)
		(void)snprintf(buf, len, "%" PRIu64, n);
	else
		(void)snprintf(buf, len, v < 10 ? "%.1f%c" : "%.0f%c", v,
		    units[u]);
}

/*
 * Is the spool's file system below the reserve its config keeps for
 * draining?  1 if it is, with the figures in buf ("1.9M free, reserve
 * 16M"); 0 if not; -1 if it cannot be told.
 */
int
reserve_figures(struct spool *sp, char *buf, size_t len)
{
	struct spool_room r;
	char freebuf[16], resbuf[16];
	int below, n = 0;

	buf[0] = '\0';
	if ((below = spool_room(sp, &r)) != 1)
		return below;
	if (r.free_bytes < r.reserve_bytes) {
		fmt_size(freebuf, sizeof(freebuf), r.free_bytes);
		fmt_size(resbuf, sizeof(resbuf), r.reserve_bytes);
		n = snprintf(buf, len, "%s free, reserve %s", freebuf, resbuf);
	}
	if (r.free_inodes < r.reserve_inodes && n >= 0 && (size_t)n < len)
		(void)snprintf(buf + n, len - (size_t)n, "%s%" PRIu64 " inodes "
		    "free, reserve %" PRIu64, n > 0 ? "; " : "", r.free_inodes,
		    r.reserve_inodes);
	return 1;
}

/*
 * Why an enqueue was refused with EDQUOT, as spool-enqueue says it: "free
 * space is below the spool's reserve: 1.9M free, reserve 16M (see ...)".
 */
const char *
reserve_text(struct spool *sp, char *buf, size_t len)
{
	char figures[128] = "";

	(void)reserve_figures(sp, figures, sizeof(figures));
	(void)snprintf(buf, len, "free space is below the spool's reserve%s%s "
	    "(see reserve and reserve-inodes in spool(7))",
	    figures[0] != '\0' ? ": " : "", figures);
	return buf;
}
