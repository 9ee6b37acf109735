/*
 * spool-ls: list the jobs in one state, sorted by ID, for a pipe or a
 * person.  What it shows of a job comes from its sidecar, read without a
 * lock, so a listing never delays a worker.  The directory is listed first
 * and each sidecar read after: a job that moved in between is left out
 * rather than shown in a state it has left.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

const char *usage_text = "spool-ls [-d DIR] [-0 | -l | --json] "
    "[--older-than DUR] [--reason R] [STATE]";

enum form { PLAIN, NUL, LONG, JSON };

struct ids {
	char **v;
	size_t n, size;
};

/* The -l columns; DETAIL is last so that its spaces do not misalign. */
static const char *const heads[] = {
	"ID", "DELIV", "DISP", "SE", "REASON", "CLASS", "AGE", "CYC", "BY",
	"DETAIL"
};
#define NCOL	(sizeof(heads) / sizeof(heads[0]))

static int
collect(void *arg, const char *id)
{
	struct ids *l = arg;
	char **v;

	if (l->n == l->size) {
		l->size = l->size ? 2 * l->size : 256;
		if ((v = reallocarray(l->v, l->size, sizeof(*v))) == NULL)
			return -1;
		l->v = v;
	}
	return (l->v[l->n] = strdup(id)) == NULL ? -1 : (l->n++, 0);
}

static int
by_id(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The library's clock: SPOOL_TEST_NOW pins it for the tests. */
static int64_t
now_ms(void)
{
	const char *s = getenv("SPOOL_TEST_NOW");
	struct timespec ts;

	if (s != NULL && *s != '\0')
		return strtoll(s, NULL, 10);
	(void)clock_gettime(CLOCK_REALTIME, &ts);	/* cannot fail */
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A short age: 950ms, 42s, 7m12s, 3h04m, 2d05h. */
static const char *
age(char *buf, size_t len, int64_t ms)
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

/* parked, redriven, dropped, or "" (spool-ls(1), DISP). */
static const char *
disposition(const struct spool_job_info *in)
{
	if (in->dropped)
		return "dropped";
	if (in->state == SPOOL_DEAD)
		return "parked";
	return in->redriven ? "redriven" : "";
}

/* Deliveries of the current cycle: "#3" in the listing. */
static int
deliveries(const struct spool_job_info *in)
{
	size_t i;
	int n = 0;

	for (i = 0; i < in->ndeliveries; i++)
		n += in->deliveries[i].cycle == in->cycles;
	return n;
}

static int jfirst;

static void
jkey(const char *key)
{
	printf("%s\"%s\":", jfirst ? "" : ",", key);
	jfirst = 0;
}

/* A JSON string; null when empty.  detail may hold '"' and '\\'. */
static void
jstr(const char *key, const char *s)
{
	jkey(key);
	if (s == NULL || *s == '\0') {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

/* A time in ms since the epoch; null when the job has none. */
static void
jtime(const char *key, int64_t ms)
{
	jkey(key);
	if (ms == 0)
		fputs("null", stdout);
	else
		printf("%" PRId64, ms);
}

static void
jnum(const char *key, int64_t v)
{
	jkey(key);
	printf("%" PRId64, v);
}

static void
jbool(const char *key, int v)
{
	jkey(key);
	fputs(v ? "true" : "false", stdout);
}

static void
print_json(const struct spool_job_info *in, int64_t now)
{
	jfirst = 1;
	putchar('{');
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
	puts("}");
}

static const char *
dash(const char *s)
{
	return s != NULL && *s != '\0' ? s : "-";
}

static void
add_row(char ***rows, size_t *nrows, const struct spool_job_info *in,
    int64_t now)
{
	char deliv[16], cyc[16], agebuf[32];
	const char *cells[NCOL];
	char **r;
	size_t i;

	(void)snprintf(deliv, sizeof(deliv), "#%d", deliveries(in));
	(void)snprintf(cyc, sizeof(cyc), "%d", in->cycles);
	cells[0] = in->id;
	cells[1] = deliv;
	cells[2] = dash(disposition(in));
	cells[3] = in->side_effect ? "yes" : "-";
	cells[4] = in->reason ? spool_reason_name(in->reason) : "-";
	cells[5] = in->class ? spool_class_name(in->class) : "-";
	cells[6] = age(agebuf, sizeof(agebuf), now - in->since);
	cells[7] = cyc;
	cells[8] = dash(in->by);
	cells[9] = dash(in->detail);
	if ((r = reallocarray(*rows, (*nrows + 1) * NCOL, sizeof(*r))) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	*rows = r;
	for (i = 0; i < NCOL; i++)
		if ((r[*nrows * NCOL + i] = strdup(cells[i])) == NULL)
			die(EXIT_TEMP, "%s", strerror(errno));
	(*nrows)++;
}

/* Columns as wide as their widest cell, two spaces apart. */
static void
print_table(char **rows, size_t nrows)
{
	size_t w[NCOL], i, c, len;

	for (c = 0; c < NCOL; c++)
		w[c] = strlen(heads[c]);
	for (i = 0; i < nrows; i++)
		for (c = 0; c < NCOL; c++)
			if ((len = strlen(rows[i * NCOL + c])) > w[c])
				w[c] = len;
	for (i = 0; i <= nrows; i++) {
		for (c = 0; c < NCOL; c++) {
			const char *s = i == 0 ? heads[c] :
			    rows[(i - 1) * NCOL + c];

			if (c + 1 < NCOL)
				printf("%-*s  ", (int)w[c], s);
			else
				printf("%s\n", s);
		}
	}
	for (i = 0; i < nrows * NCOL; i++)
		free(rows[i]);
	free(rows);
}

static int
reason_named(const char *s)
{
	int r;

	for (r = SPOOL_REASON_PERMANENT; r <= SPOOL_REASON_CANCELLED; r++)
		if (strcmp(spool_reason_name(r), s) == 0)
			return r;
	die(EXIT_PERM, "--reason: bad reason '%.40s' (permanent, exhausted, "
	    "deadline, side-effect or cancelled)", s);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "older-than", required_argument, NULL, 'o' },
		{ "reason", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	struct spool_job_info info;
	struct ids ids = { NULL, 0, 0 };
	enum spool_state state = SPOOL_DEAD;
	enum form form = PLAIN, f;
	const char *dir = NULL;
	struct spool *sp;
	char **rows = NULL;
	size_t nrows = 0, i;
	int64_t older = -1, now;
	int c, reason = 0, dropped = 0, status = EXIT_DONE;

	cmd_init(argv, 1);
	while ((c = getopt_long(argc, argv, "0d:l", longopts, NULL)) != -1) {
		switch (c) {
		case '0':
		case 'l':
		case 'j':
			/* One form of output: they would not mix. */
			f = c == '0' ? NUL : c == 'l' ? LONG : JSON;
			if (form != PLAIN && form != f)
				usage();
			form = f;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'o':
			older = opt_duration("--older-than", optarg, 1);
			break;
		case 'r':
			reason = reason_named(optarg);
			break;
		default:
			usage();
		}
	}
	if (argc - optind > 1)
		usage();
	if (optind < argc) {
		if (strcmp(argv[optind], "dropped") == 0) {
			state = SPOOL_DONE;
			dropped = 1;
		} else if (strcmp(argv[optind], "new") == 0)
			state = SPOOL_NEW;
		else if (strcmp(argv[optind], "leased") == 0)
			state = SPOOL_LEASED;
		else if (strcmp(argv[optind], "done") == 0)
			state = SPOOL_DONE;
		else if (strcmp(argv[optind], "dead") != 0)
			die(EXIT_PERM, "bad state '%.40s' (new, leased, done, "
			    "dead or dropped)", argv[optind]);
	}
	if (reason != 0 && (state == SPOOL_NEW || state == SPOOL_LEASED))
		die(EXIT_PERM, "--reason is for dead, done and dropped jobs");
	sp = open_spool(spool_dir(dir));
	if (spool_list(sp, state, collect, &ids) == -1)
		die(EXIT_TEMP, "%s/: %s", spool_state_name(state),
		    strerror(errno));
	if (ids.n > 0)		/* ids.v may be NULL, which qsort must not see */
		qsort(ids.v, ids.n, sizeof(*ids.v), by_id);
	now = now_ms();
	for (i = 0; i < ids.n; i++) {
		/* Seen twice: it moved during the listing and back. */
		if (i > 0 && strcmp(ids.v[i], ids.v[i - 1]) == 0)
			continue;
		if (spool_job_info(sp, ids.v[i], form == LONG || form == JSON,
		    &info) == -1) {
			if (errno == ENOENT)
				continue;	/* purged meanwhile */
			if (errno != EUCLEAN)
				die(EXIT_TEMP, "%s: %s", ids.v[i],
				    strerror(errno));
			say("%s: damaged job: run spool-fsck", ids.v[i]);
			status = worst(status, EXIT_TEMP);
			continue;
		}
		if (info.state == state && (!dropped || info.dropped) &&
		    (reason == 0 || info.reason == reason) &&
		    (older < 0 || now - info.since >= older)) {
			switch (form) {
			case PLAIN:
				printf("%s\n", info.id);
				break;
			case NUL:
				printf("%s%c", info.id, '\0');
				break;
			case LONG:
				add_row(&rows, &nrows, &info, now);
				break;
			case JSON:
				print_json(&info, now);
				break;
			}
		}
		spool_job_info_free(&info);
	}
	if (form == LONG)
		print_table(rows, nrows);
	for (i = 0; i < ids.n; i++)
		free(ids.v[i]);
	free(ids.v);
	spool_close(sp);
	return finish_stdout(status);
}
