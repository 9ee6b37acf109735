/*
 * What spool-stat counts (spool(7), "Watching a spool"), and its JSON:
 * spool-stat(1) prints it, and the Python package's Spool.stat() returns
 * it, so both say the same.  The counting reads directories, sidecars and
 * the audit log, never a payload.  It changes nothing, and ends nothing
 * but itself on a failure: a caller in another program goes on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "stat.h"

const enum spool_event counted[NCOUNTED] = {
	SPOOL_EV_ENQUEUE, SPOOL_EV_CLAIM, SPOOL_EV_RECLAIM, SPOOL_EV_RENEW,
	SPOOL_EV_OK, SPOOL_EV_RETRY, SPOOL_EV_RELEASE, SPOOL_EV_PARK,
	SPOOL_EV_SUPERSEDE, SPOOL_EV_REDRIVE, SPOOL_EV_DROP, SPOOL_EV_CANCEL,
	SPOOL_EV_PURGE, SPOOL_EV_PAUSE, SPOOL_EV_RESUME, SPOOL_EV_RESTORE,
	SPOOL_EV_REBUILD
};
const int age_bounds[NAGE - 1] = { 5, 10, 20, 40, 80, 160, 320, 640, 1280 };
const char *const outcomes[4] = { "queued", "done", "parked", "dropped" };

struct walk {
	struct spool *sp;
	struct stats *st;
};

const char *
underscored(char *buf, size_t len, const char *s)
{
	size_t i;

	for (i = 0; i + 1 < len && s[i] != '\0'; i++)
		buf[i] = s[i] == '-' ? '_' : s[i];
	buf[i] = '\0';
	return buf;
}

/* A job in its row and age column of --ages. */
static void
count_age(struct stats *st, const struct spool_job_info *in)
{
	int64_t minutes = (st->now - in->since) / 60000;
	int col = 0;

	while (col < NAGE - 1 && minutes >= age_bounds[col])
		col++;
	st->ages[in->state - SPOOL_NEW][col]++;
	if (in->state == SPOOL_DEAD && in->reason > 0 && in->reason < NREASON)
		st->ages[SPOOL_DEAD + in->reason - 1][col]++;
}

/* A job with a key that has a limit or a rate: leased, or waiting. */
static void
count_key(struct stats *st, const struct spool_job_info *in)
{
	struct keystat *k;
	size_t i;

	for (i = 0; i < st->nkeys; i++)
		if (strcmp(st->keys[i].l.key, in->key) == 0)
			break;
	if (in->key[0] == '\0' || i == st->nkeys)
		return;
	k = &st->keys[i];
	if (in->state == SPOOL_LEASED)
		k->leased++;
	else if (in->state == SPOOL_NEW && in->eligible <= st->now) {
		k->waiting++;
		k->first_waiting = min64(k->first_waiting, in->eligible);
	}
}

static int
visit(void *arg, const char *id, const char *file,
    const struct spool_job_info *in)
{
	struct walk *w = arg;
	struct stats *st = w->st;
	int out;

	(void)id;
	(void)file;
	if (in == NULL) {
		if (errno == ENOENT)
			return 0;	/* purged since the listing, or no job */
		if (errno == EUCLEAN) {
			st->damaged++;	/* its file is not where it says */
			return 0;
		}
		return -1;
	}
	st->state[in->state]++;
	count_age(st, in);
	count_key(st, in);
	if (in->payload_resized)
		st->damaged++;	/* in its place, but not the bytes enqueued */
	if (in->cycles >= 2)
		st->cycles2++;
	switch (in->state) {
	case SPOOL_NEW:
		if (in->eligible <= st->now) {
			st->ready++;
			st->first_ready = min64(st->first_ready, in->eligible);
		}
		break;
	case SPOOL_LEASED:
		st->first_lease = min64(st->first_lease, in->since);
		/* Renewed past the timeout: a handler that hangs? */
		st->overdue += st->set.timeout_ms > 0 &&
		    st->now - in->since > st->set.timeout_ms;
		break;
	case SPOOL_DONE:
		st->dropped += in->dropped;
		break;
	case SPOOL_DEAD:
		st->first_dead = min64(st->first_dead, in->since);
		if (in->reason >= 0 && in->reason < (int)NREASON)
			st->reason[in->reason]++;
		if (in->class >= 0 && in->class < (int)NCLASS)
			st->class[in->class]++;
		break;
	default:
		break;
	}
	if (in->redriven) {
		out = in->state == SPOOL_DEAD ? 2 : in->dropped ? 3 :
		    in->state == SPOOL_DONE ? 1 : 0;
		st->redriven[out]++;
	}
	return 0;
}

/* Count the events, and keep the latest operator action. */
static int
audit_line(void *arg, const char *line, size_t len)
{
	struct stats *st = arg;
	struct spool_audit a;
	int ev;

	if (spool_audit_parse(line, len, &a) == -1)
		return 0;	/* not ours */
	if (a.event == SPOOL_EV_VOID) {
		/* The line it names did not happen: it counts for nothing. */
		ev = spool_event_from_name(a.note);
		if (ev > SPOOL_EV_NONE && ev < (int)NEVENT && st->events[ev] > 0)
			st->events[ev]--;
		return 0;
	}
	st->events[a.event]++;
	st->hand_edits += strcmp(a.actor, "hand") == 0;
	if (spool_event_by_operator(a.event) && (st->last.event ==
	    SPOOL_EV_NONE || a.time >= st->last.time))
		st->last = a;
	return 0;
}

int
stat_gather(struct spool *sp, struct stats *st, const char **what)
{
	struct spool_limit lim[KEYS_MAX];
	struct walk w = { sp, st };
	struct spool_census c;
	size_t i;

	memset(st, 0, sizeof(*st));
	st->now = spool_now();
	st->first_ready = st->first_dead = st->first_lease = INT64_MAX;
	spool_settings(sp, &st->set);
	st->nkeys = spool_limits(sp, lim, KEYS_MAX);
	if (st->nkeys > KEYS_MAX)
		st->nkeys = KEYS_MAX;
	for (i = 0; i < st->nkeys; i++) {
		st->keys[i].l = lim[i];
		st->keys[i].first_waiting = INT64_MAX;
	}
	*what = "meta/";
	if (spool_list_jobs(sp, SPOOL_ABSENT, 0, visit, &w) == -1)
		return -1;
	*what = "census";
	if (spool_census(sp, st->state, &c) == -1)
		return -1;
	st->damaged += c.orphans + c.loose;
	st->quarantined = c.quarantined;
	*what = "paused";
	if ((st->paused = spool_paused(sp)) == -1)
		return -1;
	st->clock_synced = spool_clock(&st->clock_maxerror);
	*what = "reserve/";
	if (spool_room(sp, &st->room) == -1)
		return -1;
	*what = "audit/";
	return spool_audit_scan(sp, audit_line, st) == -1 ? -1 : 0;
}

int64_t
stat_age(const struct stats *st, int64_t first)
{
	return first == INT64_MAX || first > st->now ? 0 : st->now - first;
}

static void
add(struct metric *m, size_t *n, const char *name, int duration, int64_t v)
{
	(void)snprintf(m[*n].name, sizeof(m[*n].name), "%s", name);
	m[*n].duration = duration;
	m[(*n)++].value = v;
}

size_t
stat_metrics(const struct stats *st, struct metric *m)
{
	char name[48], word[32];
	size_t n = 0, i;

	add(m, &n, "paused", 0, st->paused);
	add(m, &n, "new", 0, st->state[SPOOL_NEW]);
	add(m, &n, "ready", 0, st->ready);
	add(m, &n, "leased", 0, st->state[SPOOL_LEASED]);
	add(m, &n, "done", 0, st->state[SPOOL_DONE]);
	add(m, &n, "dropped", 0, st->dropped);
	add(m, &n, "dead", 0, st->state[SPOOL_DEAD]);
	add(m, &n, "damaged", 0, st->damaged);
	add(m, &n, "quarantined", 0, st->quarantined);
	add(m, &n, "hand_edits", 0, (int64_t)st->hand_edits);
	add(m, &n, "cycles2", 0, st->cycles2);
	add(m, &n, "lag", 1, stat_age(st, st->first_ready));
	add(m, &n, "oldest_dead", 1, stat_age(st, st->first_dead));
	add(m, &n, "oldest_lease", 1, stat_age(st, st->first_lease));
	add(m, &n, "overdue", 0, st->overdue);
	for (i = 0; i < 4; i++) {
		(void)snprintf(name, sizeof(name), "redriven_%s", outcomes[i]);
		add(m, &n, name, 0, st->redriven[i]);
	}
	for (i = 1; i < NREASON; i++) {
		(void)snprintf(name, sizeof(name), "dead_%s", underscored(word,
		    sizeof(word), spool_reason_name((int)i)));
		add(m, &n, name, 0, st->reason[i]);
	}
	for (i = 0; i < NCLASS; i++) {
		(void)snprintf(name, sizeof(name), "dead_class_%s", i == 0 ?
		    "none" : underscored(word, sizeof(word),
		    spool_class_name((int)i)));
		add(m, &n, name, 0, st->class[i]);
	}
	return n;
}
void
stat_json(FILE *out, const struct stats *st, const struct metric *m)
{
	const struct keystat *k;
	size_t i;

	jto(out);
	jbegin(NULL, '{');
	jnum("now", st->now);
	jbool("paused", st->paused);
	jnum("timeout_ms", st->set.timeout_ms);
	/* The flat metrics; by reason and class come as objects. */
	for (i = 1; i < NFLAT; i++)
		jnum(m[i].name, m[i].value);
	jbegin("dead_by_reason", '{');
	for (i = 1; i < NREASON; i++)
		jnum(spool_reason_name((int)i), st->reason[i]);
	jend('}');
	jbegin("dead_by_class", '{');
	for (i = 0; i < NCLASS; i++)
		jnum(i == 0 ? "none" : spool_class_name((int)i), st->class[i]);
	jend('}');
	jbegin("audit_events", '{');
	for (i = 0; i < NCOUNTED; i++)
		jnum(spool_event_name(counted[i]),
		    (int64_t)st->events[counted[i]]);
	jend('}');
	jbegin("keys", '{');
	for (i = 0; i < st->nkeys; i++) {
		k = &st->keys[i];
		jbegin(k->l.key, '{');
		jnum("leased", k->leased);
		if (k->l.limit >= 0)
			jnum("limit", k->l.limit);
		else
			jstr("limit", NULL);
		if (k->l.rate > 0) {
			jnum("rate", k->l.rate);
			jnum("window_ms", k->l.window_ms);
		} else {
			jstr("rate", NULL);
			jstr("window_ms", NULL);
		}
		jnum("waiting", k->waiting);
		jnum("oldest_waiting_ms", stat_age(st, k->first_waiting));
		jend('}');
	}
	jend('}');
	if (st->last.event == SPOOL_EV_NONE)
		jstr("last_action", NULL);
	else {
		jbegin("last_action", '{');
		jstr("event", spool_event_name(st->last.event));
		jstr("by", st->last.actor);
		jnum("time", st->last.time);
		jend('}');
	}
	if (st->set.multi_host) {
		jbegin("multi_host", '{');
		jstr("host", st->set.host);
		jnum("skew_ms", st->set.skew_ms);
		jbool("clock_synchronised", st->clock_synced);
		jnum("clock_maxerror_ms", st->clock_maxerror);
		jend('}');
	}
	jend('}');
	jto(NULL);
}
