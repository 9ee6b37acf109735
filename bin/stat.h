/*
 * What spool-stat counts, and its JSON: shared by spool-stat(1) and the
 * Python package's Spool.stat(), so that both say the same, key for key.
 * Needs common.h (NCLASS, NREASON) and spool.h.
 */
#ifndef SPOOL_STAT_H
#define SPOOL_STAT_H

#include <stdio.h>

/* The audit events counted, in the order they are shown. */
extern const enum spool_event counted[];
#define NCOUNTED	17
#define NEVENT	(SPOOL_EV_REBUILD + 1)

/*
 * --ages, as Postfix's qshape: jobs by state (parked ones by reason too)
 * and by how long they have been there, in minutes, each column up to its
 * bound and the last beyond it.
 */
extern const int age_bounds[];
#define NAGE	10	/* the bounds, then beyond the last */
#define NROW	(SPOOL_DEAD + NREASON - 1)	/* states, then reasons */

/* A key with a limit or a rate: its leases, and its ready jobs. */
#define KEYS_MAX	64	/* as many as a config may have */
struct keystat {
	struct spool_limit l;
	long leased, waiting;
	int64_t first_waiting;	/* earliest eligible time of those */
};

/* What became of jobs whose current cycle began with a redrive. */
extern const char *const outcomes[4];

struct stats {
	int64_t now;
	long state[SPOOL_DEAD + 1];	/* files whose sidecar agrees */
	long ready, dropped, damaged, cycles2, quarantined;
	long overdue;	/* leases held longer than the spool's timeout */
	unsigned long hand_edits;	/* audit lines by "hand": adoptions */
	long reason[NREASON], class[NCLASS];	/* of parked jobs */
	long redriven[4];		/* by outcomes[] */
	long ages[NROW][NAGE];		/* --ages: row, age column */
	int64_t first_ready;		/* earliest eligible time, ready jobs */
	int64_t first_dead, first_lease;	/* earliest since */
	int paused;
	struct spool_settings set;	/* multi-host: the clock is shown */
	int clock_synced;
	int64_t clock_maxerror;
	struct spool_room room;	/* what the reserve holds */
	unsigned long events[NEVENT];	/* by enum spool_event */
	struct spool_audit last;	/* the last operator action, if
					   last.event is not SPOOL_EV_NONE */
	struct keystat keys[KEYS_MAX];
	size_t nkeys;
};

/* A metric that --warn and --crit may name (spool-stat(1), METRICS). */
struct metric {
	char name[48];
	int duration;		/* ms, shown as an age */
	int64_t value;
};
/* paused .. redriven_dropped, then one a reason and one a class. */
#define NFLAT	19
#define NMETRIC	(NFLAT + NREASON - 1 + NCLASS)

/*
 * Every job by its sidecar, read once; then the library's census of what
 * no sidecar names, and of quarantine/.  No payload is read.  0; or -1
 * with errno, and *what naming the part that failed ("audit/").
 */
int stat_gather(struct spool *sp, struct stats *st, const char **what);

/* Every metric an expression may name, in the order plain output shows. */
size_t stat_metrics(const struct stats *st, struct metric *m);

/* How long ago first was, or 0 for none (INT64_MAX) or the future. */
int64_t stat_age(const struct stats *st, int64_t first);

/* A name as a metric or label word: side-effect -> side_effect. */
const char *underscored(char *buf, size_t len, const char *s);

/* spool-stat --json: one object and a newline, on out. */
void stat_json(FILE *out, const struct stats *st, const struct metric *m);

#endif
