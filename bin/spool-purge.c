/*
 * spool-purge: remove finished jobs past their retention, for cron; print
 * the IDs removed.  Each removal is audit-logged, and the job's sidecar
 * stays, so a purged ID never gets a token it had before.  Parked jobs go
 * only when asked for by the state "dead" with --by and --note.  Files an
 * interrupted enqueue left in tmp/ are swept too.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

const char *usage_text = "spool-purge [-d DIR] [--dry-run] done | dropped "
    "--older-than DUR [--keep N]\n"
    "       spool-purge [-d DIR] [--dry-run] dead --by WHO --note TICKET "
    "--older-than DUR [--keep N]\n"
    "       spool-purge [-d DIR] [--dry-run] [--by WHO --note TICKET] "
    "done | dead ID ... | -";

/* Nothing writes a tmp/ file for a day: its enqueue died. */
#define TMP_AGE_MS	(24LL * 3600 * 1000)

enum kind { DONE, DROPPED, DEAD };

struct pick {
	char *id;
	int64_t since;		/* when it entered its state */
};

struct list {
	struct pick *v;
	size_t n, size;
};

static void
add_id(struct list *l, const char *id, size_t len, int64_t since,
    int *status)
{
	struct pick *v;

	if (strlen(id) != len || !spool_valid_id(id)) {
		say("%.140s: bad ID", id);
		*status = worst(*status, EXIT_PERM);
		return;
	}
	if (l->n == l->size) {
		l->size = l->size ? 2 * l->size : 256;
		if ((v = reallocarray(l->v, l->size, sizeof(*v))) == NULL)
			die(EXIT_TEMP, "%s", strerror(errno));
		l->v = v;
	}
	if ((l->v[l->n].id = strdup(id)) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	l->v[l->n++].since = since;
}

static void
read_stdin(struct list *l, int *status)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	while ((len = getline(&line, &cap, stdin)) != -1) {
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len > 0)
			add_id(l, line, (size_t)len, 0, status);
	}
	if (ferror(stdin))
		die(EXIT_TEMP, "stdin: %s", strerror(errno));
	free(line);
}

static int
collect(void *arg, const char *id)
{
	int status = EXIT_DONE;

	add_id(arg, id, strlen(id), 0, &status);
	return 0;
}

/* qsort(3) must not be given a null array, even an empty one. */
static void
sort_picks(struct pick *v, size_t n,
    int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp);
}

/*
 * Read a job without locking it.  Such a read can race a transition and
 * find the file in neither place the sidecar named, which looks like
 * damage (EUCLEAN): read again before believing it.
 */
static int
job_info(struct spool *sp, const char *id, struct spool_job_info *info)
{
	int tries = 3;

	while (spool_job_info(sp, id, 0, info) == -1)
		if (errno != EUCLEAN || --tries == 0)
			return -1;
	return 0;
}

static int
by_id(const void *a, const void *b)
{
	return strcmp(((const struct pick *)a)->id,
	    ((const struct pick *)b)->id);
}

static int
newest_first(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->since != y->since)
		return x->since > y->since ? -1 : 1;
	return strcmp(x->id, y->id);
}

static int
oldest_first(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->since != y->since)
		return x->since < y->since ? -1 : 1;
	return strcmp(x->id, y->id);
}

/*
 * The jobs of a kind past retention, oldest first: all of that kind, less
 * the keep newest, less those younger than older_than.
 */
static void
select_old(struct spool *sp, enum kind kind, int64_t older_than,
    size_t keep, struct list *l, int *status)
{
	enum spool_state state = kind == DEAD ? SPOOL_DEAD : SPOOL_DONE;
	struct spool_job_info info;
	struct list seen = { NULL, 0, 0 };
	struct timespec ts;
	int64_t now;
	size_t i, k;

	if (clock_gettime(CLOCK_REALTIME, &ts) == -1)
		die(EXIT_TEMP, "clock_gettime: %s", strerror(errno));
	now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (spool_list(sp, state, collect, &seen) == -1)
		die(EXIT_TEMP, "%s/: %s", spool_state_name(state),
		    strerror(errno));
	sort_picks(seen.v, seen.n, by_id);
	for (i = 0; i < seen.n; i++) {
		if (i > 0 && strcmp(seen.v[i].id, seen.v[i - 1].id) == 0)
			continue;
		if (job_info(sp, seen.v[i].id, &info) == -1) {
			/* Gone meanwhile (a new cycle): not ours to purge. */
			if (errno != ENOENT) {
				say("%s: %s", seen.v[i].id, errno == EUCLEAN ?
				    "damaged job: run spool-fsck" :
				    strerror(errno));
				*status = worst(*status, EXIT_TEMP);
			}
			continue;
		}
		if (info.state == state && (kind == DEAD ||
		    info.dropped == (kind == DROPPED)))
			add_id(l, info.id, strlen(info.id), info.since, status);
		spool_job_info_free(&info);
	}
	for (i = 0; i < seen.n; i++)
		free(seen.v[i].id);
	free(seen.v);
	sort_picks(l->v, l->n, newest_first);
	for (i = k = 0; i < l->n; i++) {
		if (i < keep || now - l->v[i].since < older_than)
			free(l->v[i].id);
		else
			l->v[k++] = l->v[i];
	}
	l->n = k;
	sort_picks(l->v, l->n, oldest_first);
}

/* What a purge would answer, without making it. */
static void
preview(struct spool *sp, enum spool_state from, const char *id,
    struct spool_result *res)
{
	struct spool_job_info info;

	memset(res, 0, sizeof(*res));
	if (job_info(sp, id, &info) == -1) {
		res->status = errno == ENOENT ? 1 : -1;
		res->refusal = SPOOL_NO_JOB;
		res->err = errno;
		return;
	}
	if (info.state != from) {
		res->status = 1;
		res->refusal = from == SPOOL_DEAD ? SPOOL_NO_NOT_PARKED :
		    SPOOL_NO_NOT_DONE;
		res->state = info.state;
	}
	spool_job_info_free(&info);
}

static int
purge(struct spool *sp, const struct spool_operator *op, enum kind kind,
    int dry_run, struct list *l)
{
	enum spool_state from = kind == DEAD ? SPOOL_DEAD : SPOOL_DONE;
	struct spool_item *items;
	size_t i, k, n;
	int status = EXIT_DONE;

	if ((items = calloc(SPOOL_BATCH_MAX, sizeof(*items))) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	for (i = 0; i < l->n; i += n) {
		n = l->n - i < SPOOL_BATCH_MAX ? l->n - i : SPOOL_BATCH_MAX;
		for (k = 0; k < n; k++) {
			items[k].id = l->v[i + k].id;
			if (dry_run)
				preview(sp, from, items[k].id, &items[k].res);
		}
		if (!dry_run && spool_purge(sp, op->by != NULL ? op : NULL,
		    from, items, n) == -1)
			die(EXIT_TEMP, "%s", strerror(errno));
		for (k = 0; k < n; k++) {
			if (items[k].res.status == 0)
				printf("%s\n", items[k].id);
			status = worst(status, report(items[k].id,
			    &items[k].res));
		}
	}
	free(items);
	return status;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "by", required_argument, NULL, 'b' },
		{ "dry-run", no_argument, NULL, 'D' },
		{ "keep", required_argument, NULL, 'k' },
		{ "note", required_argument, NULL, 'n' },
		{ "older-than", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 }
	};
	struct spool_operator op = { NULL, NULL, 0 };
	struct list l = { NULL, 0, 0 };
	const char *dir = NULL, *state;
	int64_t older_than = -1;
	long keep = -1;
	enum kind kind;
	struct spool *sp;
	size_t i, swept;
	int c, dry_run = 0, named, status = EXIT_DONE;

	cmd_init(argv, 1);
	while ((c = getopt_long(argc, argv, "d:", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'b':
			op.by = opt_word("--by", optarg, spool_valid_note);
			break;
		case 'D':
			dry_run = 1;
			break;
		case 'k':
			keep = opt_number("--keep", optarg, 0, 1000000000);
			break;
		case 'n':
			op.note = opt_word("--note", optarg, spool_valid_note);
			break;
		case 'o':
			older_than = opt_duration("--older-than", optarg, 1);
			break;
		default:
			usage();
		}
	}
	if (optind == argc)
		usage();
	state = argv[optind++];
	named = optind < argc;
	if (strcmp(state, "done") == 0)
		kind = DONE;
	else if (strcmp(state, "dropped") == 0 && !named)
		kind = DROPPED;
	else if (strcmp(state, "dead") == 0)
		kind = DEAD;
	else
		usage();
	/* Parked jobs go only by a person's named request; both or none. */
	if ((op.by == NULL) != (op.note == NULL) ||
	    (kind == DEAD && op.by == NULL) ||
	    (named ? older_than != -1 || keep != -1 : older_than == -1))
		usage();
	if (named && argc - optind == 1 && strcmp(argv[optind], "-") == 0)
		read_stdin(&l, &status);
	else
		for (; optind < argc; optind++)
			add_id(&l, argv[optind], strlen(argv[optind]), 0,
			    &status);
	sp = open_spool(spool_dir(dir));
	if (!named)
		select_old(sp, kind, older_than, keep < 0 ? 0 : (size_t)keep,
		    &l, &status);
	status = worst(status, purge(sp, &op, kind, dry_run, &l));
	if (!dry_run && spool_sweep_tmp(sp, TMP_AGE_MS, &swept) == -1) {
		say("tmp/: %s", strerror(errno));
		status = worst(status, EXIT_TEMP);
	}
	for (i = 0; i < l.n; i++)
		free(l.v[i].id);
	free(l.v);
	spool_close(sp);
	return finish_stdout(status);
}
