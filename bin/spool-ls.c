/*
 * spool-ls: list the jobs in some states, for a pipe or a person.  What it
 * shows of a job comes from its sidecar, read once and never changed
 * (spool-layout.md, "Readers"), so a listing waits for no transition.  Each
 * file's sidecar is read as the directory is: a job shown is where its
 * sidecar says it is, and a file it does not name (a job that moved since,
 * a second file a crash left) is not shown.  But a job whose own place is
 * empty, its file moved here by a hand, is shown here, damaged.  A pipe's forms come in
 * directory order, a job at a time, in memory that does not grow with the
 * spool; -l holds its rows to align and sort them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

const char *usage_text = "spool-ls [-d DIR] [-0 | -l | --json] "
    "[--older-than DUR] [--reason R] [--class C] [--key KEY] [--trace T] "
    "[STATE ...]";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR            the spool (default: $SPOOL_DIR)\n"
    "  -0                IDs end in NUL, not a newline\n"
    "  -l                a table, sorted by ID\n"
    "  --json            one JSON object a line\n"
    "  --older-than DUR  only jobs in their state for at least DUR\n"
    "  --reason R        only jobs parked for reason R\n"
    "  --class C         only jobs whose last failure was of class C\n"
    "  --key KEY         only jobs with key KEY\n"
    "  --trace T         only jobs enqueued with trace ID T\n";

enum form { PLAIN, NUL, LONG, JSON };

/* The -l columns. */
enum col {
	ID, DELIV, DISP, KEY, SE, REASON, CLASS, DUE, OWNER, EXPIRES, AGE, CYC,
	BY, NOTE, DETAIL, NCOL
};
static const char *const heads[NCOL] = {
	"ID", "DELIV", "DISP", "KEY", "SE", "REASON", "CLASS", "DUE", "OWNER",
	"EXPIRES", "AGE", "CYC", "BY", "NOTE", "DETAIL"
};

/*
 * The columns of each state, as fit it; DETAIL is last so that its spaces
 * do not misalign.  BY and NOTE may hold spaces too: they are shown
 * as written, and padded like any other column.  KEY is shown only when
 * a job of the table has a key.  -l is for people; scripts read --json.
 * A list ends at its first ID after the first.
 */
static const enum col cols[][NCOL] = {
	[SPOOL_NEW] = { ID, DELIV, DISP, KEY, DUE, CLASS, AGE, CYC, BY, NOTE,
	    DETAIL },
	[SPOOL_LEASED] = { ID, DELIV, DISP, KEY, OWNER, EXPIRES, AGE, CYC,
	    BY, NOTE },
	[SPOOL_DONE] = { ID, DELIV, DISP, KEY, AGE, CYC, BY, NOTE, DETAIL },
	[SPOOL_DEAD] = { ID, DELIV, DISP, KEY, SE, REASON, CLASS, AGE, CYC,
	    BY, NOTE, DETAIL },
};

static size_t
ncols(enum spool_state state)
{
	size_t n = 1;

	while (n < NCOL && cols[state][n] != ID)
		n++;
	return n;
}

static void
print_json(const struct spool_job_info *in, int64_t now)
{
	jbegin(NULL, '{');
	jjob(in, now);
	jend('}');
}

/*
 * The rows of -l: each row's cells end to end in one allocation, rows[i]
 * pointing at its first, with the first 8 bytes of its ID as a number
 * that orders as they do (the sort compares it before the ID); w[] the
 * widest cell of each column so far.
 */
struct row {
	uint64_t key;
	char *cells;
};

struct table {
	const enum col *col;	/* the state's columns */
	size_t ncol;
	struct row *rows;
	size_t nrows, cap;
	size_t w[NCOL];
	int keyed;		/* a row has a key: KEY is shown */
};

/* prefix and n in decimal, as "%s%d" prints them, at the end of buf. */
static const char *
number(char *buf, size_t len, const char *prefix, int n)
{
	char *p = buf + len;
	unsigned v = n < 0 ? -(unsigned)n : (unsigned)n;
	size_t plen = strlen(prefix);

	*--p = '\0';
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	if (n < 0)
		*--p = '-';
	p -= plen;
	memcpy(p, prefix, plen);
	return p;
}

/* "in 4m12s", "now", or "12s ago": when t comes, from now. */
static const char *
when(char *buf, size_t len, int64_t t, int64_t now)
{
	char age[32];

	if (t == now)
		return "now";
	(void)fmt_age(age, sizeof(age), t > now ? t - now : now - t);
	(void)snprintf(buf, len, t > now ? "in %s" : "%s ago", age);
	return buf;
}

static void
add_row(struct table *t, const struct spool_job_info *in, int64_t now)
{
	char deliv[16], cyc[16], agebuf[32], due[40], expires[40], moved[64];
	const char *all[NCOL], *cells[NCOL];
	size_t i, len[NCOL], total = 0;
	struct row *r;
	char *p;

	all[ID] = in->id;
	all[DELIV] = number(deliv, sizeof(deliv), "#", deliveries(in));
	all[DISP] = in->payload_resized || in->damage != SPOOL_DAMAGE_NONE ?
	    "damaged" : dash(disposition(in));
	all[KEY] = dash(in->key);
	t->keyed |= in->key[0] != '\0';
	all[SE] = in->side_effect ? "yes" : "-";
	all[REASON] = in->reason ? spool_reason_name(in->reason) : "-";
	all[CLASS] = in->class ? spool_class_name(in->class) : "-";
	all[DUE] = in->eligible <= now ? "now" :
	    when(due, sizeof(due), in->eligible, now);
	all[OWNER] = dash(in->owner);
	all[EXPIRES] = when(expires, sizeof(expires), in->lease_until, now);
	all[AGE] = fmt_age(agebuf, sizeof(agebuf), now - in->since);
	all[CYC] = number(cyc, sizeof(cyc), "", in->cycles);
	all[BY] = dash(in->by);
	all[NOTE] = dash(in->note);
	all[DETAIL] = in->damage != SPOOL_DAMAGE_NONE ? damage_text(in) :
	    dash(in->detail);
	if (in->damage == SPOOL_DAMAGE_MISSING) {
		/* A file a hand moved here: where its record puts it. */
		(void)snprintf(moved, sizeof(moved), "its record says %s/; "
		    "spool-fsck --repair settles it",
		    spool_state_name(in->state));
		all[DETAIL] = moved;
	}
	for (i = 0; i < t->ncol; i++)
		cells[i] = all[t->col[i]];
	for (i = 0; i < t->ncol; i++) {
		total += (len[i] = strlen(cells[i])) + 1;
		if (width(cells[i]) > t->w[i])
			t->w[i] = width(cells[i]);
	}
	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 1024;
		if ((r = reallocarray(t->rows, t->cap, sizeof(*r))) == NULL)
			die(EXIT_TEMP, "%s", strerror(errno));
		t->rows = r;
	}
	r = &t->rows[t->nrows++];
	if ((p = r->cells = malloc(total)) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	for (i = 0, r->key = 0; i < 8; i++)
		r->key = r->key << 8 | (i < len[0] ?
		    (unsigned char)in->id[i] : 0);
	for (i = 0; i < t->ncol; i++) {
		memcpy(p, cells[i], len[i] + 1);
		p += len[i] + 1;
	}
}

/* Rows by ID, in byte order: a row begins with its ID. */
static int
by_id(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return strcmp(x->cells, y->cells);
}

/*
 * One row, its columns as wide as their widest cell, two spaces apart:
 * made in line, which grows to the widest row, and written at once.
 */
static void
print_row(const struct table *t, const char *cell, char **line, size_t *cap)
{
	size_t c, len, pad, n = 0;
	char *p;

	for (c = 0; c < t->ncol; c++, cell += len + 1) {
		len = strlen(cell);
		if (t->col[c] == KEY && !t->keyed)
			continue;
		pad = c + 1 < t->ncol ? t->w[c] + 2 - width(cell) : 1;
		if (n + len + pad > *cap) {
			*cap = (n + len + pad) * 2;
			if ((p = realloc(*line, *cap)) == NULL)
				die(EXIT_TEMP, "%s", strerror(errno));
			*line = p;
		}
		memcpy(*line + n, cell, len);
		memset(*line + n + len, ' ', pad);
		n += len + pad;
	}
	(*line)[n - 1] = '\n';
	(void)fwrite(*line, 1, n, stdout);
}

static void
print_table(struct table *t)
{
	char head[256], *p = head, *line = NULL;
	size_t c, i, cap = 0;

	for (c = 0; c < t->ncol; c++) {
		if (strlen(heads[t->col[c]]) > t->w[c])
			t->w[c] = strlen(heads[t->col[c]]);
		p = stpcpy(p, heads[t->col[c]]) + 1;
	}
	if (t->nrows > 0)
		qsort(t->rows, t->nrows, sizeof(*t->rows), by_id);
	print_row(t, head, &line, &cap);
	for (i = 0; i < t->nrows; i++) {
		print_row(t, t->rows[i].cells, &line, &cap);
		free(t->rows[i].cells);
	}
	free(t->rows);
	free(line);
	memset(t, 0, sizeof(*t));
}

/* What to list, and how; the rows of -l. */
struct ls {
	struct spool *sp;
	enum spool_state state;
	enum form form;
	int dropped, reason, class, status;
	int64_t older, now;
	const char *key, *trace;	/* NULL: any */
	struct table table;
};

static int
show(void *arg, const char *id, const char *file,
    const struct spool_job_info *info)
{
	struct ls *l = arg;

	if (info == NULL) {
		if (errno == ENOENT)
			return 0;	/* purged meanwhile */
		if (errno != EUCLEAN)
			die(EXIT_TEMP, "%s: %s", id, strerror(errno));
		l->status = worst(l->status, damaged(id));
		return 0;
	}
	/*
	 * A job whose file a hand moved here, its own place empty, is listed
	 * here.  Any other file of a job that is not where its record says
	 * is a second one: not shown.  A damaged job is named on stderr
	 * with what settles it.
	 */
	if (info->damage != SPOOL_DAMAGE_MISSING &&
	    (info->state != l->state || strcmp(info->file, file) != 0))
		return 0;
	if (info->damage != SPOOL_DAMAGE_NONE)
		l->status = worst(l->status, damaged(id));
	if ((l->dropped && !info->dropped) ||
	    (l->reason != 0 && info->reason != l->reason) ||
	    (l->class != 0 && info->class != l->class) ||
	    (l->older >= 0 && l->now - info->since < l->older) ||
	    (l->key != NULL && strcmp(info->key, l->key) != 0) ||
	    (l->trace != NULL && strcmp(info->trace, l->trace) != 0))
		return 0;
	switch (l->form) {
	case PLAIN:
	case NUL:
		(void)fputs(info->id, stdout);
		(void)putchar(l->form == PLAIN ? '\n' : '\0');
		break;
	case LONG:
		add_row(&l->table, info, l->now);
		break;
	case JSON:
		print_json(info, l->now);
		break;
	}
	return 0;
}

/* A STATE operand: its state, and whether only dropped jobs of it. */
static enum spool_state
state_of(const char *arg, int *dropped)
{
	static const char *const names[] = {
		[SPOOL_NEW] = "new", [SPOOL_LEASED] = "leased",
		[SPOOL_DONE] = "done", [SPOOL_DEAD] = "dead"
	};
	int i;

	*dropped = strcmp(arg, "dropped") == 0;
	if (*dropped)
		return SPOOL_DONE;
	for (i = SPOOL_NEW; i <= SPOOL_DEAD; i++)
		if (strcmp(arg, names[i]) == 0)
			return (enum spool_state)i;
	die(EXIT_PERM, "bad state '%.40s' (new, leased, done, dead or dropped)",
	    arg);
}

/* The jobs of one state; with -l and several states, a title first. */
static void
list_state(struct ls *l, int titled)
{
	if (l->form == LONG) {
		l->table.col = cols[l->state];
		l->table.ncol = ncols(l->state);
		if (titled)
			printf("%s:\n", l->dropped ? "dropped" :
			    spool_state_name(l->state));
	}
	if (spool_list_jobs(l->sp, l->state, l->form == LONG ||
	    l->form == JSON, show, l) == -1)
		die(EXIT_TEMP, "%s/: %s", spool_state_name(l->state),
		    strerror(errno));
	if (l->form == LONG)
		print_table(&l->table);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "class", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "key", required_argument, NULL, 'k' },
		{ "older-than", required_argument, NULL, 'o' },
		{ "reason", required_argument, NULL, 'r' },
		{ "trace", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 }
	};
	struct ls l = { .form = PLAIN, .status = EXIT_DONE, .older = -1 };
	enum form f;
	const char *dir = NULL;
	int c, i, dropped;

	cmd_init(argv, 1);
	while ((c = cmd_getopt(argc, argv, "0d:l", longopts)) != -1) {
		switch (c) {
		case '0':
		case 'l':
		case 'j':
			/* One form of output: they would not mix. */
			f = c == '0' ? NUL : c == 'l' ? LONG : JSON;
			if (l.form != PLAIN && l.form != f)
				usage();
			l.form = f;
			break;
		case 'c':
			l.class = opt_name("--class", optarg, &class_names);
			break;
		case 'd':
			dir = optarg;
			break;
		case 'k':
			l.key = opt_word("--key", optarg, spool_valid_key);
			break;
		case 'o':
			l.older = opt_duration("--older-than", optarg, 1);
			break;
		case 'r':
			l.reason = opt_name("--reason", optarg, &reason_names);
			break;
		case 't':
			l.trace = opt_word("--trace", optarg, spool_valid_id);
			break;
		default:
			usage();
		}
	}
	/* Every operand is checked before the spool is opened. */
	for (i = optind; i < argc; i++)
		if (state_of(argv[i], &dropped) < SPOOL_DONE && l.reason != 0)
			die(EXIT_PERM, "--reason is for dead, done and dropped "
			    "jobs");
	l.sp = open_spool(spool_dir(dir));
	l.now = spool_now();
	if (optind == argc) {
		l.state = SPOOL_DEAD;
		list_state(&l, 0);
	}
	for (i = optind; i < argc; i++) {
		if (i > optind && l.form == LONG)
			(void)putchar('\n');
		l.state = state_of(argv[i], &l.dropped);
		list_state(&l, argc - optind > 1);
	}
	spool_close(l.sp);
	return finish_stdout(l.status);
}
