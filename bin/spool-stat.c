/*
 * spool-stat: what an operator or a cron job watches (spool(7), "Watching
 * a spool"): jobs per state, parked jobs by reason and class, the age of the
 * oldest parked job, ready job and lease, what became of redriven jobs,
 * the last operator action, and each key with a limit or a rate.  It
 * reads directories, sidecars and the audit log, never a payload, so its
 * cost does not grow with the jobs' size.
 * With --warn or --crit it is a monitoring check, and then speaks the
 * monitoring-plugin convention (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN)
 * instead of the exit vocabulary of every other command.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "stat.h"

const char *usage_text = "spool-stat [-d DIR] [-a | --ages | --json | --prom] "
    "[--warn EXPR] ... [--crit EXPR] ...";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR       the spool (default: $SPOOL_DIR)\n"
    "  -a           every metric, 0 or not (default: those not 0)\n"
    "  --ages       jobs by state and age, as qshape\n"
    "  --json       one JSON object\n"
    "  --prom       the Prometheus text format\n"
    "  --warn EXPR  a check: warn when EXPR holds, as dead>0\n"
    "  --crit EXPR  a check: critical when EXPR holds\n";

/* The monitoring-plugin statuses, used only with --warn or --crit. */
enum { CHECK_OK, CHECK_WARNING, CHECK_CRITICAL, CHECK_UNKNOWN };
static const char *const check_words[] = {
	"OK", "WARNING", "CRITICAL", "UNKNOWN"
};
static int checking;

struct expr {
	const struct metric *m;
	char op[3];
	int64_t limit;
	const char *text;	/* the limit as the user wrote it */
	int level;		/* CHECK_WARNING or CHECK_CRITICAL */
	int breached;
};

static void fail(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* One line, and the status: UNKNOWN on stdout when checking. */
static void
fail(int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!checking)
		die(status, "%s", msg);
	printf("SPOOL UNKNOWN - %s\n", msg);
	(void)fflush(stdout);
	exit(CHECK_UNKNOWN);
}

/* An age as a metric shows it: none is 0s. */
static const char *
age(char *buf, size_t len, int64_t ms)
{
	return ms <= 0 ? "0s" : fmt_age(buf, len, ms);
}

/* Milliseconds as seconds, exactly: 420, 0.25. */
static const char *
seconds(char *buf, size_t len, int64_t ms)
{
	if (ms % 1000 == 0)
		(void)snprintf(buf, len, "%" PRId64, ms / 1000);
	else
		(void)snprintf(buf, len, "%" PRId64 ".%03" PRId64, ms / 1000,
		    ms % 1000);
	return buf;
}



/*
 * The reserve, when it holds less than it may: a command drew on it when
 * the file system was full, or the file system is too small to hold it.
 */
static void
reserve_line(const struct spool_room *r)
{
	char held[16], want[16];

	if (!r->holding || (r->held_bytes >= r->held_bytes_max &&
	    r->held_inodes >= r->held_inodes_max))
		return;
	fmt_size(held, sizeof(held), r->held_bytes);
	fmt_size(want, sizeof(want), r->held_bytes_max);
	printf("%-31s %s of %s held, %" PRIu64 " of %" PRIu64 " inodes: the "
	    "disk was full, or is small; an enqueue with room makes it whole\n",
	    "reserve", held, want, r->held_inodes, r->held_inodes_max);
}


/*
 * "key smtp  3 leased of 4, rate 100/1m, 12 waiting, oldest 2m10s": a key
 * with a limit or a rate (spool(7), "Limits").
 */
static void
key_line(const struct stats *st, const struct keystat *k)
{
	char name[SPOOL_KEY_MAX + 8], lim[32] = "", rate[48] = "", old[48] = "";
	char buf[32];

	(void)snprintf(name, sizeof(name), "key %s", k->l.key);
	if (k->l.limit >= 0)
		(void)snprintf(lim, sizeof(lim), " of %d", k->l.limit);
	if (k->l.rate > 0)
		(void)snprintf(rate, sizeof(rate), ", rate %d/%s", k->l.rate,
		    fmt_duration(buf, sizeof(buf), k->l.window_ms));
	if (k->waiting > 0)
		(void)snprintf(old, sizeof(old), ", oldest %s", age(buf,
		    sizeof(buf), stat_age(st, k->first_waiting)));
	printf("%-31s %ld leased%s%s, %ld waiting%s\n", name, k->leased, lim,
	    rate, k->waiting, old);
}

static void
print_plain(const struct stats *st, const struct metric *m, size_t n,
    int all)
{
	char buf[32], when[40];
	size_t i;

	for (i = 0; i < n; i++) {
		if (m[i].value == 0 && !all)
			continue;	/* what is not there: -a shows it */
		if (m[i].duration)
			printf("%-31s %s\n", m[i].name,
			    age(buf, sizeof(buf), m[i].value));
		else
			printf("%-31s %" PRId64 "\n", m[i].name, m[i].value);
	}
	if (st->last.event == SPOOL_EV_NONE)
		printf("%-31s -\n", "last_action");
	else
		printf("%-31s %s by %s at %s (%s ago)\n", "last_action",
		    spool_event_name(st->last.event), dash(st->last.actor),
		    fmt_time(when, sizeof(when), st->last.time),
		    age(buf, sizeof(buf), st->now - st->last.time));
	if (st->set.timeout_ms > 0)
		printf("%-31s %s\n", "timeout", age(buf, sizeof(buf),
		    st->set.timeout_ms));
	else
		printf("%-31s none\n", "timeout");
	reserve_line(&st->room);
	for (i = 0; i < st->nkeys; i++)
		key_line(st, &st->keys[i]);
	if (!st->set.multi_host)
		return;
	printf("%-31s %s, skew %s\n", "multi_host", st->set.host,
	    age(buf, sizeof(buf), st->set.skew_ms));
	if (st->clock_synced)
		printf("%-31s synchronised, max error %s\n", "clock",
		    age(buf, sizeof(buf), st->clock_maxerror));
	else
		printf("%-31s NOT synchronised: leases need NTP or chrony\n",
		    "clock");
}

/* The --ages table: a header, then a row a state and a parked reason. */
static void
print_ages(const struct stats *st)
{
	char name[32];
	long total;
	int r, c;

	printf("%-22s %6s", "STATE", "TOTAL");
	for (c = 0; c < NAGE - 1; c++)
		printf(" %5dm", age_bounds[c]);
	printf(" %5dm+\n", age_bounds[NAGE - 2]);
	for (r = 0; r < NROW; r++) {
		if (r < SPOOL_DEAD)
			(void)snprintf(name, sizeof(name), "%s",
			    spool_state_name(r + SPOOL_NEW));
		else
			(void)snprintf(name, sizeof(name), "dead %s",
			    spool_reason_name(r - SPOOL_DEAD + 1));
		for (c = 0, total = 0; c < NAGE; c++)
			total += st->ages[r][c];
		printf("%-22s %6ld", name, total);
		for (c = 0; c < NAGE; c++)
			printf(" %6ld", st->ages[r][c]);
		printf("\n");
	}
}


/* A label value: backslash, double quote and newline are escaped. */
static char *
label_value(const char *s)
{
	char *v, *o;

	if ((v = o = malloc(2 * strlen(s) + 1)) == NULL)
		fail(EXIT_TEMP, "%s", strerror(errno));
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			*o++ = '\\';
		if (*s == '\n') {
			*o++ = '\\';
			*o++ = 'n';
		} else
			*o++ = *s;
	}
	*o = '\0';
	return v;
}

static void
family(const char *name, const char *type, const char *help)
{
	printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The keys with a limit or a rate: a family a figure, a line a key. */
static void
prom_keys(const struct stats *st, const char *sv)
{
	const struct keystat *k;
	char buf[32];
	size_t i;

	family("spool_key_leased_jobs", "gauge",
	    "Leased jobs of each key with a limit or a rate.");
	for (i = 0, k = st->keys; i < st->nkeys; i++, k++)
		printf("spool_key_leased_jobs{spool=\"%s\",key=\"%s\"} %ld\n",
		    sv, k->l.key, k->leased);
	family("spool_key_limit", "gauge",
	    "Most leases of the key at once (config limit.KEY).");
	for (i = 0, k = st->keys; i < st->nkeys; i++, k++)
		if (k->l.limit >= 0)
			printf("spool_key_limit{spool=\"%s\",key=\"%s\"} %d\n",
			    sv, k->l.key, k->l.limit);
	family("spool_key_waiting_jobs", "gauge",
	    "Ready jobs of the key, waiting for a slot or a worker.");
	for (i = 0, k = st->keys; i < st->nkeys; i++, k++)
		printf("spool_key_waiting_jobs{spool=\"%s\",key=\"%s\"} "
		    "%ld\n", sv, k->l.key, k->waiting);
	family("spool_key_oldest_waiting_seconds", "gauge",
	    "How long the key's oldest ready job has been due.");
	for (i = 0, k = st->keys; i < st->nkeys; i++, k++)
		printf("spool_key_oldest_waiting_seconds{spool=\"%s\",key="
		    "\"%s\"} %s\n", sv, k->l.key, seconds(buf, sizeof(buf),
		    stat_age(st, k->first_waiting)));
}

/* The text exposition format, for node_exporter's textfile collector. */
static void
print_prom(const struct stats *st, const char *dir)
{
	static const enum spool_state states[] = {
		SPOOL_NEW, SPOOL_LEASED, SPOOL_DONE, SPOOL_DEAD
	};
	char buf[32], *path, *sv, *by;
	size_t i;

	if ((path = realpath(dir, NULL)) == NULL)
		fail(EXIT_TEMP, "%s: %s", dir, strerror(errno));
	sv = label_value(path);
	free(path);
	family("spool_jobs", "gauge",
	    "Jobs in each state directory (done includes dropped jobs).");
	for (i = 0; i < 4; i++)
		printf("spool_jobs{spool=\"%s\",state=\"%s\"} %ld\n", sv,
		    spool_state_name(states[i]), st->state[states[i]]);
	family("spool_ready_jobs", "gauge", "Jobs in new/ that are due now.");
	printf("spool_ready_jobs{spool=\"%s\"} %ld\n", sv, st->ready);
	family("spool_dropped_jobs", "gauge",
	    "Jobs in done/ that were dropped, not run.");
	printf("spool_dropped_jobs{spool=\"%s\"} %ld\n", sv, st->dropped);
	family("spool_damaged_jobs", "gauge",
	    "Jobs whose sidecar and file disagree: run spool-fsck.");
	printf("spool_damaged_jobs{spool=\"%s\"} %ld\n", sv, st->damaged);
	family("spool_quarantined_files", "gauge",
	    "Files spool-fsck --repair moved to quarantine/: look at each.");
	printf("spool_quarantined_files{spool=\"%s\"} %ld\n", sv,
	    st->quarantined);
	family("spool_overdue_leases", "gauge", "Leases held longer than "
	    "the spool's timeout: a handler that hangs, renewing its lease?");
	printf("spool_overdue_leases{spool=\"%s\"} %ld\n", sv, st->overdue);
	family("spool_hand_edits_total", "counter", "Moves made by hand in "
	    "the spool that spool-fsck --repair adopted, in the audit logs "
	    "kept.");
	printf("spool_hand_edits_total{spool=\"%s\"} %lu\n", sv,
	    st->hand_edits);
	family("spool_multi_cycle_jobs", "gauge",
	    "Jobs in their second cycle or later.");
	printf("spool_multi_cycle_jobs{spool=\"%s\"} %ld\n", sv, st->cycles2);
	family("spool_parked_jobs", "gauge", "Jobs in dead/, by park reason.");
	for (i = 1; i < NREASON; i++)
		printf("spool_parked_jobs{spool=\"%s\",reason=\"%s\"} %ld\n",
		    sv, spool_reason_name((int)i), st->reason[i]);
	family("spool_parked_jobs_by_class", "gauge",
	    "Jobs in dead/, by the class of their last failure.");
	for (i = 0; i < NCLASS; i++)
		printf("spool_parked_jobs_by_class{spool=\"%s\",class=\"%s\"} "
		    "%ld\n", sv, i == 0 ? "none" : spool_class_name((int)i),
		    st->class[i]);
	family("spool_redriven_jobs", "gauge", "Jobs whose current cycle "
	    "began with a redrive, by what became of them.");
	for (i = 0; i < 4; i++)
		printf("spool_redriven_jobs{spool=\"%s\",outcome=\"%s\"} %ld\n",
		    sv, outcomes[i], st->redriven[i]);
	family("spool_backlog_lag_seconds", "gauge",
	    "How long the oldest ready job has been due.");
	printf("spool_backlog_lag_seconds{spool=\"%s\"} %s\n", sv,
	    seconds(buf, sizeof(buf), stat_age(st, st->first_ready)));
	family("spool_oldest_parked_age_seconds", "gauge",
	    "How long the oldest parked job has been in dead/.");
	printf("spool_oldest_parked_age_seconds{spool=\"%s\"} %s\n", sv,
	    seconds(buf, sizeof(buf), stat_age(st, st->first_dead)));
	family("spool_oldest_lease_age_seconds", "gauge",
	    "How long the oldest lease has been held.");
	printf("spool_oldest_lease_age_seconds{spool=\"%s\"} %s\n", sv,
	    seconds(buf, sizeof(buf), stat_age(st, st->first_lease)));
	family("spool_paused", "gauge", "1 if claims are paused.");
	printf("spool_paused{spool=\"%s\"} %d\n", sv, st->paused);
	if (st->set.multi_host) {
		family("spool_clock_synchronised", "gauge", "1 if this host's "
		    "clock is synchronised (multi-host spools).");
		printf("spool_clock_synchronised{spool=\"%s\"} %d\n", sv,
		    st->clock_synced);
	}
	if (st->nkeys > 0)
		prom_keys(st, sv);
	family("spool_audit_events_total", "counter", "Lines in the audit "
	    "logs kept, by event; falls when old logs are removed.");
	for (i = 0; i < NCOUNTED; i++)
		printf("spool_audit_events_total{spool=\"%s\",event=\"%s\"} "
		    "%lu\n", sv, spool_event_name(counted[i]),
		    st->events[counted[i]]);
	if (st->last.event != SPOOL_EV_NONE) {
		/* by is a person's text: it may hold '"' and '\\'. */
		by = label_value(dash(st->last.actor));
		family("spool_last_operator_action_timestamp_seconds", "gauge",
		    "When an operator last acted: redrive, drop, cancel, "
		    "purge, pause or resume.");
		printf("spool_last_operator_action_timestamp_seconds{spool="
		    "\"%s\",event=\"%s\",by=\"%s\"} %s\n", sv,
		    spool_event_name(st->last.event), by,
		    seconds(buf, sizeof(buf), st->last.time));
		free(by);
	}
	free(sv);
}

/* NAME OP VALUE, e.g. dead>0, lag>=5m; the metric is found later. */
static void
parse_expr(const char *s, int level, struct expr *e, char (*names)[48])
{
	size_t len = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_");
	const char *op = s + len;

	memset(e, 0, sizeof(*e));
	e->level = level;
	if (len == 0 || len >= 48)
		fail(EXIT_PERM, "bad expression '%.60s' (want NAME OP VALUE, "
		    "e.g. dead>0)", s);
	memcpy(*names, s, len);
	(*names)[len] = '\0';
	if (op[0] == '\0' || strchr("<>=", op[0]) == NULL)
		fail(EXIT_PERM, "bad expression '%.60s': the operator is one "
		    "of > >= < <= =", s);
	len = op[0] != '=' && op[1] == '=' ? 2 : 1;
	memcpy(e->op, op, len);
	e->text = op + len;
}

/* Find each expression's metric and read its limit. */
static void
bind(struct expr *e, size_t ne, char (*names)[48], const struct metric *m,
    size_t nm)
{
	size_t i, k;
	char *end;

	for (i = 0; i < ne; i++) {
		for (k = 0; k < nm && strcmp(m[k].name, names[i]) != 0; k++)
			;
		if (k == nm)
			fail(EXIT_PERM, "no metric '%s' (see spool-stat(1), "
			    "METRICS)", names[i]);
		e[i].m = &m[k];
		if (m[k].duration) {
			if (spool_parse_duration(e[i].text, &e[i].limit) == -1)
				fail(EXIT_PERM, "%s: bad duration '%.40s' (use "
				    "e.g. 500ms, 30s, 5m, 2h, 7d)", names[i],
				    e[i].text);
		} else {
			errno = 0;
			e[i].limit = strtoll(e[i].text, &end, 10);
			if (e[i].text[0] < '0' || e[i].text[0] > '9' ||
			    *end != '\0' || errno != 0)
				fail(EXIT_PERM, "%s: bad number '%.40s'",
				    names[i], e[i].text);
		}
	}
}

static int
breached(const struct expr *e)
{
	int64_t v = e->m->value;

	switch (e->op[0]) {
	case '>':
		return e->op[1] == '=' ? v >= e->limit : v > e->limit;
	case '<':
		return e->op[1] == '=' ? v <= e->limit : v < e->limit;
	default:
		return v == e->limit;
	}
}

static void
show_value(const struct metric *m)
{
	char buf[32];

	if (m->duration)
		printf("%s=%s", m->name, age(buf, sizeof(buf), m->value));
	else
		printf("%s=%" PRId64, m->name, m->value);
}

/*
 * One line: SPOOL STATUS - the breached conditions, worst first, then the
 * other metrics named, each once; then the named metrics as performance
 * data after '|', durations in seconds.
 */
static int
check(struct expr *e, size_t ne)
{
	const struct metric *shown[64];
	char buf[32];
	size_t i, k, nshown = 0;
	int status = CHECK_OK, level;

	for (i = 0; i < ne; i++)
		if ((e[i].breached = breached(&e[i])) && e[i].level > status)
			status = e[i].level;
	printf("SPOOL %s -", check_words[status]);
	for (level = CHECK_CRITICAL; level >= CHECK_OK; level--) {
		for (i = 0; i < ne; i++) {
			if (level != CHECK_OK &&
			    (!e[i].breached || e[i].level != level))
				continue;
			for (k = 0; k < nshown && shown[k] != e[i].m; k++)
				;
			if (k < nshown)
				continue;
			shown[nshown++] = e[i].m;
			printf("%s ", nshown > 1 ? "," : "");
			show_value(e[i].m);
			if (level != CHECK_OK)
				printf(" (%s%s)", e[i].op, e[i].text);
		}
	}
	printf(" |");
	for (k = 0; k < nshown; k++) {
		if (shown[k]->duration)
			printf(" %s=%ss", shown[k]->name, seconds(buf,
			    sizeof(buf), shown[k]->value));
		else
			printf(" %s=%" PRId64, shown[k]->name,
			    shown[k]->value);
	}
	putchar('\n');
	return status;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ages", no_argument, NULL, 'g' },
		{ "crit", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "prom", no_argument, NULL, 'p' },
		{ "warn", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 }
	};
	struct expr e[64];
	char names[64][48];
	struct metric m[NMETRIC];
	struct stats st;
	const char *dir = NULL, *what;
	struct spool *sp;
	char msg[512];
	size_t ne = 0, nm;
	int c, form = 0, bad = 0, status;

	cmd_init(argv, 1);
	/* A bad option is reported after the loop: UNKNOWN if checking. */
	while ((c = cmd_getopt(argc, argv, "ad:", longopts)) != -1) {
		switch (c) {
		case 'a':
		case 'g':
		case 'j':
		case 'p':
			bad |= form != 0 && form != c;
			form = c;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'c':
		case 'w':
			checking = 1;
			if (ne == sizeof(e) / sizeof(e[0])) {
				bad = 1;
				break;
			}
			parse_expr(optarg, c == 'c' ? CHECK_CRITICAL :
			    CHECK_WARNING, &e[ne], &names[ne]);
			ne++;
			break;
		default:
			bad = 1;
		}
	}
	if (bad || optind != argc || (checking && form != 0)) {
		if (checking)
			fail(EXIT_PERM, "usage: %s", usage_text);
		usage();
	}
	if ((dir = which_spool(dir, msg, sizeof(msg))) == NULL)
		fail(EXIT_PERM, "%s", msg);
	if ((sp = spool_open(dir)) == NULL) {
		status = open_failure(dir, errno, msg, sizeof(msg));
		fail(status, "%s", msg);
	}
	if (stat_gather(sp, &st, &what) == -1)
		fail(EXIT_TEMP, "%s: %s", what, strerror(errno));
	nm = stat_metrics(&st, m);
	if (checking) {
		bind(e, ne, names, m, nm);
		c = check(e, ne);
		spool_close(sp);
		if (fflush(stdout) == EOF || ferror(stdout))
			return CHECK_UNKNOWN;
		return c;
	}
	if (form == 'j')
		stat_json(stdout, &st, m);
	else if (form == 'p')
		print_prom(&st, dir);
	else if (form == 'g')
		print_ages(&st);
	else
		print_plain(&st, m, nm, form == 'a');
	spool_close(sp);
	return finish_stdout(EXIT_DONE);
}
