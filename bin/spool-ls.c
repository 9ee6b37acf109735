/*
 * spool-ls: list the jobs in one state, for a pipe or a person.  What it
 * shows of a job comes from its sidecar, read once and never changed
 * (spool-layout.md, "Readers"), so a listing waits for no transition.  Each
 * file's sidecar is read as the directory is: a job shown is where its
 * sidecar says it is, and a file it does not name (a job that moved since,
 * a second file a crash left) is not shown.  A pipe's forms come in
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
    "[--older-than DUR] [--reason R] [STATE]";

enum form { PLAIN, NUL, LONG, JSON };

/* The -l columns; DETAIL is last so that its spaces do not misalign. */
static const char *const heads[] = {
	"ID", "DELIV", "DISP", "SE", "REASON", "CLASS", "AGE", "CYC", "BY",
	"DETAIL"
};
#define NCOL	(sizeof(heads) / sizeof(heads[0]))

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
	struct row *rows;
	size_t nrows, cap;
	size_t w[NCOL];
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

static void
add_row(struct table *t, const struct spool_job_info *in, int64_t now)
{
	char deliv[16], cyc[16], agebuf[32];
	const char *cells[NCOL];
	size_t i, len[NCOL], total = 0;
	struct row *r;
	char *p;

	cells[0] = in->id;
	cells[1] = number(deliv, sizeof(deliv), "#", deliveries(in));
	cells[2] = dash(disposition(in));
	cells[3] = in->side_effect ? "yes" : "-";
	cells[4] = in->reason ? spool_reason_name(in->reason) : "-";
	cells[5] = in->class ? spool_class_name(in->class) : "-";
	cells[6] = fmt_age(agebuf, sizeof(agebuf), now - in->since);
	cells[7] = number(cyc, sizeof(cyc), "", in->cycles);
	cells[8] = dash(in->by);
	cells[9] = dash(in->detail);
	for (i = 0; i < NCOL; i++) {
		total += (len[i] = strlen(cells[i])) + 1;
		if (len[i] > t->w[i])
			t->w[i] = len[i];
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
	for (i = 0; i < NCOL; i++) {
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

	for (c = 0; c < NCOL; c++) {
		len = strlen(cell);
		pad = c + 1 < NCOL ? t->w[c] + 2 - len : 1;
		if (n + len + pad > *cap) {
			*cap = (n + len + pad) * 2;
			if ((p = realloc(*line, *cap)) == NULL)
				die(EXIT_TEMP, "%s", strerror(errno));
			*line = p;
		}
		memcpy(*line + n, cell, len);
		memset(*line + n + len, ' ', pad);
		n += len + pad;
		cell += len + 1;
	}
	(*line)[n - 1] = '\n';
	(void)fwrite(*line, 1, n, stdout);
}

static void
print_table(struct table *t)
{
	char head[256], *p = head, *line = NULL;
	size_t c, i, cap = 0;

	for (c = 0; c < NCOL; c++) {
		if (strlen(heads[c]) > t->w[c])
			t->w[c] = strlen(heads[c]);
		p = stpcpy(p, heads[c]) + 1;
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
}

/* What to list, and how; the rows of -l. */
struct ls {
	struct spool *sp;
	enum spool_state state;
	enum form form;
	int dropped, reason, status;
	int64_t older, now;
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
	if (info->state != l->state || strcmp(info->file, file) != 0 ||
	    (l->dropped && !info->dropped) ||
	    (l->reason != 0 && info->reason != l->reason) ||
	    (l->older >= 0 && l->now - info->since < l->older))
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

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "older-than", required_argument, NULL, 'o' },
		{ "reason", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	struct ls l = { .state = SPOOL_DEAD, .form = PLAIN, .status = EXIT_DONE,
	    .older = -1 };
	enum form f;
	const char *dir = NULL;
	int c;

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
		case 'd':
			dir = optarg;
			break;
		case 'o':
			l.older = opt_duration("--older-than", optarg, 1);
			break;
		case 'r':
			l.reason = opt_name("--reason", optarg, &reason_names);
			break;
		default:
			usage();
		}
	}
	if (argc - optind > 1)
		usage();
	if (optind < argc) {
		if (strcmp(argv[optind], "dropped") == 0) {
			l.state = SPOOL_DONE;
			l.dropped = 1;
		} else if (strcmp(argv[optind], "new") == 0)
			l.state = SPOOL_NEW;
		else if (strcmp(argv[optind], "leased") == 0)
			l.state = SPOOL_LEASED;
		else if (strcmp(argv[optind], "done") == 0)
			l.state = SPOOL_DONE;
		else if (strcmp(argv[optind], "dead") != 0)
			die(EXIT_PERM, "bad state '%.40s' (new, leased, done, "
			    "dead or dropped)", argv[optind]);
	}
	if (l.reason != 0 && (l.state == SPOOL_NEW ||
	    l.state == SPOOL_LEASED))
		die(EXIT_PERM, "--reason is for dead, done and dropped jobs");
	l.sp = open_spool(spool_dir(dir));
	l.now = spool_now();
	if (spool_list_jobs(l.sp, l.state, l.form == LONG || l.form == JSON,
	    show, &l) == -1)
		die(EXIT_TEMP, "%s/: %s", spool_state_name(l.state),
		    strerror(errno));
	if (l.form == LONG)
		print_table(&l.table);
	spool_close(l.sp);
	return finish_stdout(l.status);
}
