/*
 * spool-show: everything known about one job, for the person deciding what
 * to do with it: its state and envelope from the sidecar, the history of
 * every delivery, and its lines from every audit file, rotated ones too,
 * in time order, as a table.  Nothing is changed (the sidecar is read under a shared
 * lock), and the payload is not read: it is the one file under dead/ or
 * done/ that a person may cat.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

const char *usage_text = "spool-show [-d DIR] [--json] ID";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR  the spool (default: $SPOOL_DIR)\n"
    "  --json  one JSON object\n";

struct line {
	char *text;
	struct spool_audit a;
	size_t seq;		/* the order it was read in */
};

struct audit {
	const char *id;
	struct line *lines;
	size_t n, size;
};

/* Keep the job's lines; others, and lines that are not ours, pass by. */
static int
keep(void *arg, const char *line, size_t len)
{
	struct audit *a = arg;
	struct spool_audit parsed;
	struct line *v;

	if (memmem(line, len, a->id, strlen(a->id)) == NULL)
		return 0;	/* most lines: not worth parsing */
	if (spool_audit_parse(line, len, &parsed) == -1 ||
	    strcmp(parsed.id, a->id) != 0)
		return 0;
	if (a->n == a->size) {
		a->size = a->size ? 2 * a->size : 32;
		if ((v = reallocarray(a->lines, a->size, sizeof(*v))) == NULL)
			return -1;
		a->lines = v;
	}
	if ((a->lines[a->n].text = strndup(line, len)) == NULL)
		return -1;
	a->lines[a->n].a = parsed;
	a->lines[a->n].seq = a->n;
	a->n++;
	return 0;
}

/*
 * By time.  Lines of one millisecond keep the order in which they were
 * read: qsort is not stable, so seq is.
 */
static int
by_time(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	if (x->a.time != y->a.time)
		return x->a.time < y->a.time ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static void
show_json(const struct spool_job_info *in, const struct audit *a,
    int64_t now)
{
	const struct spool_delivery *d;
	const struct spool_audit *l;
	char when[40];
	size_t i;

	jbegin(NULL, '{');
	jjob(in, now);
	jbegin("history", '[');
	for (i = 0; i < in->ndeliveries; i++) {
		d = &in->deliveries[i];
		jbegin(NULL, '{');
		jnum("cycle", d->cycle);
		jnum("attempt", d->attempt);
		jnum("token", (int64_t)d->token);
		jstr("owner", d->owner);
		jtime("claimed", d->claimed);
		jtime("ended", d->ended);
		jstr("end", d->end);
		jstr("class", d->class ? spool_class_name(d->class) : NULL);
		jstr("detail", d->detail);
		jend('}');
	}
	jend(']');
	jbegin("audit", '[');
	for (i = 0; i < a->n; i++) {
		l = &a->lines[i].a;
		jbegin(NULL, '{');
		jstr("time", fmt_time(when, sizeof(when), l->time));
		jstr("event", spool_event_name(l->event));
		jstr("id", l->id);
		jnum("token", (int64_t)l->token);
		jnum("attempt", l->attempt);
		jnum("cycle", l->cycle);
		jstr("actor", l->actor);
		jstr("reason", l->reason ? spool_reason_name(l->reason) : NULL);
		jstr("class", l->class ? spool_class_name(l->class) : NULL);
		jstr("note", l->note);
		jstr("writer", l->writer);
		jend('}');
	}
	jend(']');
	jend('}');
}

/*
 * A table for people: heads, then a row of cells for each of n rows, each
 * column as wide as its widest cell, two spaces apart; the last column is
 * not padded, so that its spaces do not misalign.  fill(arg, i, cell, buf)
 * points cell at row i's cells, made in buf if it must.
 */
#define COLS_MAX	11	/* the audit table's */
#define CELL_MAX	48	/* a number, a time, "-": in buf; text: as is */

typedef void fill_fn(const void *arg, size_t i, const char **cell,
    char buf[][CELL_MAX]);

static void
print_table(const char *const *heads, size_t ncol, size_t n, fill_fn *fill,
    const void *arg)
{
	char buf[COLS_MAX][CELL_MAX];
	const char *cell[COLS_MAX];
	size_t w[COLS_MAX], i, c, len;
	int pass;

	for (c = 0; c < ncol; c++)
		w[c] = strlen(heads[c]);
	/* Pass 0 measures, pass 1 prints: the cells are cheap to make. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i <= n; i++) {
			if (i == 0)
				memcpy(cell, heads, ncol * sizeof(*cell));
			else
				fill(arg, i - 1, cell, buf);
			/* Padded to the columns a cell takes: UTF-8 text. */
			for (c = 0; c < ncol; c++) {
				len = width(cell[c]);
				if (pass == 0) {
					if (len > w[c])
						w[c] = len;
				} else if (c + 1 < ncol)
					printf("%s%*s", cell[c],
					    (int)(w[c] - len + 2), "");
				else
					printf("%s\n", cell[c]);
			}
		}
	}
}

/* The deliveries, a row each. */
static const char *const history_heads[] = {
	"CYC", "ATT", "TOKEN", "OWNER", "CLAIMED", "ENDED", "END", "CLASS",
	"DETAIL"
};
#define HISTORY_COLS	(sizeof(history_heads) / sizeof(history_heads[0]))

static void
history_row(const void *arg, size_t i, const char **cell, char buf[][CELL_MAX])
{
	const struct spool_delivery *d =
	    &((const struct spool_job_info *)arg)->deliveries[i];

	(void)snprintf(buf[0], CELL_MAX, "%d", d->cycle);
	(void)snprintf(buf[1], CELL_MAX, "%d", d->attempt);
	(void)snprintf(buf[2], CELL_MAX, "%" PRIu64, d->token);
	cell[0] = buf[0];
	cell[1] = buf[1];
	cell[2] = buf[2];
	cell[3] = dash(d->owner);
	cell[4] = fmt_time(buf[4], CELL_MAX, d->claimed);
	cell[5] = fmt_time(buf[5], CELL_MAX, d->ended);
	cell[6] = dash(d->end);
	cell[7] = d->class ? spool_class_name(d->class) : "-";
	cell[8] = dash(d->detail);
}

/*
 * The audit lines, a row each, under the log's own field names but ID,
 * which is the job's.  A claim's NOTE is the token it superseded: its
 * column is PREV.
 */
static const char *const audit_heads[] = {
	"TIME", "EVENT", "TOKEN", "ATTEMPT", "CYCLE", "ACTOR", "REASON",
	"CLASS", "PREV", "NOTE", "WRITER"
};
#define AUDIT_COLS	(sizeof(audit_heads) / sizeof(audit_heads[0]))

static void
audit_row(const void *arg, size_t i, const char **cell, char buf[][CELL_MAX])
{
	const struct spool_audit *l = &((const struct audit *)arg)->lines[i].a;
	int claim = l->event == SPOOL_EV_CLAIM || l->event == SPOOL_EV_RECLAIM;

	(void)snprintf(buf[2], CELL_MAX, "%" PRIu64, l->token);
	(void)snprintf(buf[3], CELL_MAX, "%d", l->attempt);
	(void)snprintf(buf[4], CELL_MAX, "%d", l->cycle);
	cell[0] = fmt_time(buf[0], CELL_MAX, l->time);
	cell[1] = spool_event_name(l->event);
	cell[2] = buf[2];
	cell[3] = buf[3];
	cell[4] = buf[4];
	cell[5] = dash(l->actor);
	cell[6] = l->reason ? spool_reason_name(l->reason) : "-";
	cell[7] = l->class ? spool_class_name(l->class) : "-";
	cell[8] = claim ? dash(l->note) : "-";
	cell[9] = claim ? "-" : dash(l->note);
	cell[10] = dash(l->writer);
}

/* The audit lines, after an empty line; none, no table. */
static void
show_audit(const struct audit *a)
{
	printf("\n");
	if (a->n > 0)
		print_table(audit_heads, AUDIT_COLS, a->n, audit_row, a);
}

static void
show_text(const struct spool_job_info *in, const struct audit *a,
    int64_t now)
{
	char t1[40], agebuf[32];

	printf("id           %s\n", in->id);
	if (damage_text(in) != NULL)
		printf("damaged      %s\n", damage_text(in));
	if (in->damage == SPOOL_DAMAGE_SIDECAR) {
		show_audit(a);	/* its sidecar says nothing */
		return;
	}
	printf("state        %s\n", spool_state_name(in->state));
	printf("disposition  %s\n", dash(disposition(in)));
	printf("since        %s (%s ago)\n", fmt_time(t1, sizeof(t1), in->since),
	    fmt_age(agebuf, sizeof(agebuf), now - in->since));
	printf("created      %s\n", fmt_time(t1, sizeof(t1), in->created));
	printf("deadline     %s\n", fmt_time(t1, sizeof(t1), in->deadline));
	if (in->state == SPOOL_NEW)
		printf("eligible     %s\n", fmt_time(t1, sizeof(t1), in->eligible));
	if (in->state == SPOOL_LEASED)
		printf("lease        %s until %s\n", in->owner,
		    fmt_time(t1, sizeof(t1), in->lease_until));
	printf("trace        %s\n", dash(in->trace));
	if (in->key[0] != '\0')
		printf("key          %s\n", in->key);
	if (in->payload_xxh3 != 0)
		printf("payload      %" PRIu64 " bytes, xxh3 %016" PRIx64 "\n",
		    in->payload_size, in->payload_xxh3);
	else
		printf("payload      unverified: enqueued before records kept "
		    "a size and checksum\n");
	printf("token        %" PRIu64 "\n", in->token);
	printf("attempts     %d of %d\n", in->attempts, in->max_attempts);
	printf("cycles       %d%s\n", in->cycles, in->redriven ?
	    " (this one began with a redrive)" : "");
	printf("reason       %s\n", in->reason ?
	    spool_reason_name(in->reason) : "-");
	printf("class        %s\n", in->class ? spool_class_name(in->class) :
	    "-");
	printf("detail       %s\n", dash(in->detail));
	printf("side-effect  %s\n", in->side_effect ? "may have happened: "
	    "reconcile, then redrive with --reconciled" : "no");
	/* Who and why as they were written: a line each, spaces and all. */
	if (in->acted != 0) {
		printf("acted        %s\n", fmt_time(t1, sizeof(t1),
		    in->acted));
		printf("by           %s\n", dash(in->by));
		printf("note         %s\n", dash(in->note));
	} else
		printf("acted        -\n");
	printf("\n");
	print_table(history_heads, HISTORY_COLS, in->ndeliveries, history_row,
	    in);
	show_audit(a);
}

/*
 * A payload that is not the size its record says: shown all the same, and
 * what settles it said, as spool-fsck says it for the state it is in.
 * Damaged, as spool-stat and spool-ls say: 100.
 */
static int
resized(const char *id, enum spool_state state)
{
	say("%s: its payload is not the size its record says: changed by "
	    "hand, or torn; %s", id, spool_payload_advice(state));
	return EXIT_PERM;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 }
	};
	struct spool_job_info info;
	struct audit a = { NULL, NULL, 0, 0 };
	const char *dir = NULL;
	struct spool *sp;
	enum spool_state state;
	size_t i;
	int c, json = 0, status = EXIT_DONE, resize;

	cmd_init(argv, 1);
	while ((c = cmd_getopt(argc, argv, "d:", longopts)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'j':
			json = 1;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 1)
		usage();
	a.id = argv[optind];
	if (!spool_valid_id(a.id))
		die(EXIT_PERM, "%.140s: bad ID", a.id);
	sp = open_spool(spool_dir(dir));
	/* A damaged job is shown all the same: then is when it is needed. */
	if (spool_job_info(sp, a.id, 1, &info) == -1) {
		if (errno == ENOENT)
			die(EXIT_NO, "%s: no such job", a.id);
		if (errno != EUCLEAN)
			die(EXIT_TEMP, "%s: %s", a.id, strerror(errno));
		status = EXIT_PERM;
	}
	if (spool_audit_scan(sp, keep, &a) == -1)
		die(EXIT_TEMP, "audit/: %s", strerror(errno));
	if (a.n > 0)		/* a.lines may be NULL, which qsort must not see */
		qsort(a.lines, a.n, sizeof(*a.lines), by_time);
	if (json)
		show_json(&info, &a, spool_now());
	else
		show_text(&info, &a, spool_now());
	state = info.state;
	resize = info.payload_resized;
	spool_job_info_free(&info);
	for (i = 0; i < a.n; i++)
		free(a.lines[i].text);
	free(a.lines);
	spool_close(sp);
	if (status != EXIT_DONE)
		status = damaged(a.id);
	else if (resize)
		status = resized(a.id, state);
	return finish_stdout(status);
}
