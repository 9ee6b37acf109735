/*
 * spool-purge: remove finished jobs past their retention, for cron; print
 * the IDs removed.  Each removal is audit-logged; the spool's token
 * counter sees to it that a purged ID never gets a token it had before.
 * Parked jobs go only when asked for by the state "dead" with --by and
 * --note, and --missing records the removal of jobs whose file a person
 * removed by hand.  Files an interrupted enqueue left in tmp/ are swept
 * too.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

const char *usage_text = "spool-purge [-d DIR] [--dry-run] done | dropped "
    "--older-than DUR [--keep N]\n"
    "       spool-purge [-d DIR] [--dry-run] dead --by WHO --note TICKET "
    "--older-than DUR [--keep N]\n"
    "       spool-purge [-d DIR] [--dry-run] [--by WHO --note TICKET] "
    "done | dead ID ... | [-0] -\n"
    "       spool-purge [-d DIR] [--dry-run] --missing --by WHO --note "
    "TICKET ID ... | [-0] -";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR            the spool (default: $SPOOL_DIR)\n"
    "  --older-than DUR  only jobs in their state for at least DUR\n"
    "  --keep N          keep the N newest jobs of the kind\n"
    "  --missing         record named jobs whose files were removed by hand\n"
    "  --by WHO          who purges (needed for dead)\n"
    "  --note TICKET     why: a ticket or incident identifier\n"
    "  --dry-run         print what would be removed, change nothing\n"
    "  -0                with -, IDs end in NUL, not a newline\n";

/* Nothing writes a tmp/ file for a day: its enqueue died. */
#define TMP_AGE_MS	(24LL * 3600 * 1000)

enum kind { DONE, DROPPED, DEAD };

struct purge {
	struct spool *sp;
	const struct spool_operator *op;	/* NULL: nobody named */
	enum spool_state from;
	int dry_run;
};

/* done/ holds two kinds: jobs that ran, and jobs that were dropped. */
static int
of_kind(void *arg, const struct spool_job_info *in)
{
	enum kind kind = *(const enum kind *)arg;

	return kind == DEAD || in->dropped == (kind == DROPPED);
}

static int
newest_first(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->since != y->since)
		return x->since > y->since ? -1 : 1;
	return strcmp(x->id, y->id);
}

/*
 * The jobs of a kind past retention, oldest first: all of that kind, less
 * the keep newest, less those that entered their state after cutoff.
 */
static void
select_old(struct spool *sp, enum kind kind, int64_t cutoff, size_t keep,
    struct picks *l, int *status)
{
	size_t i, k;

	select_jobs(sp, kind == DEAD ? SPOOL_DEAD : SPOOL_DONE, of_kind,
	    &kind, l, status);
	picks_sort(l, newest_first);
	for (i = k = 0; i < l->n; i++) {
		if (i < keep || l->v[i].since > cutoff)
			free(l->v[i].id);
		else
			l->v[k++] = l->v[i];
	}
	l->n = k;
	picks_sort(l, picks_oldest_first);
}

/* A dry run of --missing: a job is missing if it is damaged. */
static void
preview_missing(struct spool *sp, struct spool_item *item)
{
	struct spool_result *res = &item->res;
	struct spool_job_info info;

	memset(res, 0, sizeof(*res));
	if (spool_job_info(sp, item->id, 0, &info) == 0) {
		res->status = 1;
		res->refusal = SPOOL_NO_NOT_MISSING;
		res->state = info.state;
		spool_job_info_free(&info);
	} else if (errno == ENOENT) {
		res->status = 1;
		res->refusal = SPOOL_NO_JOB;
	} else if (errno != EUCLEAN) {
		res->status = -1;
		res->err = errno;
	}
}

static int
purge(void *arg, struct spool_item *items, size_t n)
{
	const struct purge *p = arg;
	size_t k;

	if (!p->dry_run)
		return spool_purge(p->sp, p->op, p->from, items, n);
	for (k = 0; k < n; k++) {
		if (p->from == SPOOL_ABSENT)
			preview_missing(p->sp, &items[k]);
		else
			preview(p->sp, &items[k], p->from, p->from ==
			    SPOOL_DEAD ? SPOOL_NO_NOT_PARKED : SPOOL_NO_NOT_DONE,
			    0, 0);
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		OPERATOR_OPTIONS,
		{ "dry-run", no_argument, NULL, 'D' },
		{ "keep", required_argument, NULL, 'k' },
		{ "missing", no_argument, NULL, 'm' },
		{ "older-than", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 }
	};
	struct spool_operator op = { 0 };
	struct purge p = { NULL, NULL, SPOOL_DONE, 0 };
	struct picks l = { NULL, 0, 0, 0 };
	const char *dir = NULL, *state;
	int64_t older_than = -1, cutoff, before = 0;
	long keep = -1;
	enum kind kind;
	size_t swept;
	int c, named, missing = 0, status = EXIT_DONE;

	cmd_init(argv, 1);
	while ((c = cmd_getopt(argc, argv, "0d:", longopts)) != -1) {
		switch (c) {
		case '0':
			ids_nul = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'b':
		case 'n':
			operator_option(c, optarg, &op);
			break;
		case 'D':
			p.dry_run = 1;
			break;
		case 'k':
			keep = opt_number("--keep", optarg, 0, 1000000000);
			break;
		case 'm':
			missing = 1;
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
	if (missing) {
		/* Only named jobs, and who and why: a removal by hand. */
		if (older_than != -1 || keep != -1)
			usage();
		who_and_why(&op, "--missing", 1);
		(void)ids_on_stdin(argv + optind, argc - optind);
		p.sp = open_spool(spool_dir(dir));
		p.op = &op;
		p.from = SPOOL_ABSENT;
		named_in_batches(argv + optind, argc - optind, 0, purge, &p,
		    &status);
		spool_close(p.sp);
		return finish_stdout(status);
	}
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
	if (named ? older_than != -1 || keep != -1 : older_than == -1)
		usage();
	/* Parked jobs go only by a person's named request; both or none. */
	who_and_why(&op, state, kind == DEAD);
	(void)ids_on_stdin(argv + optind, argc - optind);
	p.sp = open_spool(spool_dir(dir));
	p.op = op.by != NULL ? &op : NULL;
	p.from = kind == DEAD ? SPOOL_DEAD : SPOOL_DONE;
	if (!named) {
		/*
		 * A job is purged only if it is still as the selection saw
		 * it: one that left and came back meanwhile (a new cycle, a
		 * redrive) is younger than the cutoff, and is refused.
		 */
		cutoff = spool_now() - older_than;
		select_old(p.sp, kind, cutoff, keep < 0 ? 0 : (size_t)keep,
		    &l, &status);
		before = cutoff + 1;
		/* More than one batch: a long run, shown on a terminal. */
		progress_begin(l.n > SPOOL_BATCH_MAX, 0);
		status = worst(status, in_batches(&l, before, purge, &p));
	} else
		named_in_batches(argv + optind, argc - optind, 0, purge, &p,
		    &status);
	if (!p.dry_run && spool_sweep_tmp(p.sp, TMP_AGE_MS, &swept) == -1) {
		say("tmp/: %s", strerror(errno));
		status = worst(status, EXIT_TEMP);
	}
	picks_free(&l);
	spool_close(p.sp);
	return finish_stdout(status);
}
