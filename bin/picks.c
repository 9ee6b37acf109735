/*
 * The IDs an operator acts on: named, read from stdin, or selected from a
 * state by what the jobs' sidecars say; then acted on a batch at a time,
 * each done ID printed and each refusal reported.
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

/* -0: the IDs on stdin end in NUL, as spool-ls -0 and find -print0 write. */
int ids_nul;

static int
append(struct picks *l, const char *id, int64_t since)
{
	struct pick *v;

	if (l->n == l->size) {
		l->size = l->size ? 2 * l->size : 256;
		if ((v = reallocarray(l->v, l->size, sizeof(*v))) == NULL)
			return -1;
		l->v = v;
	}
	if ((l->v[l->n].id = strdup(id)) == NULL)
		return -1;
	l->v[l->n++].since = since;
	return 0;
}

/* Keep a valid ID; report a bad one, which no call ever sees. */
void
picks_add(struct picks *l, const char *id, size_t len, int64_t since,
    int *status)
{
	if (strlen(id) != len) {
		say("%.140s: bad ID: the input holds a NUL byte (give -0 to "
		    "read IDs that end in NUL, as spool-ls -0 prints them)",
		    id);
		*status = worst(*status, EXIT_PERM);
		l->bad++;
		return;
	}
	if (!spool_valid_id(id)) {
		say("%.140s: bad ID", id);
		*status = worst(*status, EXIT_PERM);
		l->bad++;
		return;
	}
	if (append(l, id, since) == -1)
		die(EXIT_TEMP, "%s", strerror(errno));
}

/*
 * 1 if the operands are a lone "-": IDs on stdin, which must be open.
 * -0 says how stdin ends its IDs: without "-" it is a usage error.
 */
int
ids_on_stdin(char **args, int nargs)
{
	if (nargs != 1 || strcmp(args[0], "-") != 0) {
		if (ids_nul)
			usage();
		return 0;
	}
	if (stdin_closed)
		die(EXIT_PERM, "standard input is closed");
	return 1;
}

/*
 * Add to l the operands, or with a lone "-" the IDs on stdin, one a line
 * (with -0, each ending in NUL):
 * at most max of them (0: all), and return 0 at the end of the input.
 */
static int
read_some(struct picks *l, char **args, int nargs, size_t max, int *status)
{
	static char *line;
	static size_t cap;
	ssize_t len;
	int i;

	if (!ids_on_stdin(args, nargs)) {
		for (i = 0; i < nargs; i++)
			picks_add(l, args[i], strlen(args[i]), 0, status);
		return 0;
	}
	while (max == 0 || l->n < max) {
		if ((len = getdelim(&line, &cap, ids_nul ? '\0' : '\n',
		    stdin)) == -1) {
			if (ferror(stdin))
				die(EXIT_TEMP, "stdin: %s", strerror(errno));
			free(line);
			line = NULL;
			cap = 0;
			return 0;
		}
		if (len > 0 && line[len - 1] == (ids_nul ? '\0' : '\n'))
			line[--len] = '\0';
		if (len > 0)
			picks_add(l, line, (size_t)len, 0, status);
	}
	return 1;
}

/* The operands, or with a lone "-" one ID a line from stdin. */
void
read_ids(struct picks *l, char **args, int nargs, int *status)
{
	(void)read_some(l, args, nargs, 0, status);
}

/*
 * in_batches() for the IDs that args name, its status folded into
 * *status: stdin is read a batch at a time, so that a list of any length
 * is acted on in the memory of one.
 */
void
named_in_batches(char **args, int nargs, int64_t before,
    int (*act)(void *arg, struct spool_item *items, size_t n), void *arg,
    int *status)
{
	struct picks l = { NULL, 0, 0, 0 };
	int more, st;

	do {
		more = read_some(&l, args, nargs, SPOOL_BATCH_MAX, status);
		st = in_batches(&l, before, act, arg);
		*status = worst(*status, st);
		picks_free(&l);
	} while (more);
}

/* qsort(3) must not be given a null array, even an empty one. */
void
picks_sort(struct picks *l, int (*cmp)(const void *, const void *))
{
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), cmp);
}

/* For picks_sort: the longest in its state first, then by ID. */
int
picks_oldest_first(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->since != y->since)
		return x->since < y->since ? -1 : 1;
	return strcmp(x->id, y->id);
}

void
picks_free(struct picks *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].id);
	free(l->v);
	l->v = NULL;
	l->n = l->size = 0;
}

/* spool_list() hands over valid names only. */
static int
collect(void *arg, const char *id, const char *file)
{
	(void)file;
	return append(arg, id, 0);
}

static int
by_id(const void *a, const void *b)
{
	return strcmp(((const struct pick *)a)->id,
	    ((const struct pick *)b)->id);
}

/*
 * The IDs of the jobs whose files are in state, sorted, each once: a job
 * that moves out and back during the listing is seen twice.
 */
void
list_ids(struct spool *sp, enum spool_state state, struct picks *l)
{
	size_t i, k;

	if (spool_list(sp, state, collect, l) == -1)
		die(EXIT_TEMP, "%s/: %s", spool_state_name(state),
		    strerror(errno));
	picks_sort(l, by_id);
	for (i = k = 0; i < l->n; i++) {
		if (k > 0 && strcmp(l->v[i].id, l->v[k - 1].id) == 0)
			free(l->v[i].id);
		else
			l->v[k++] = l->v[i];
	}
	l->n = k;
}

/*
 * Add to l the jobs in state that match, each with the time it entered the
 * state, in ID order.  The directory is listed first and each sidecar read
 * after, under a shared lock: a job that moved in between is not in state
 * any more, and is not selected.  One that could not be read is reported.
 */
void
select_jobs(struct spool *sp, enum spool_state state,
    int (*match)(void *arg, const struct spool_job_info *in), void *arg,
    struct picks *l, int *status)
{
	struct picks seen = { NULL, 0, 0, 0 };
	struct spool_job_info info;
	size_t i;

	list_ids(sp, state, &seen);
	for (i = 0; i < seen.n; i++) {
		if (spool_job_info(sp, seen.v[i].id, 0, &info) == -1) {
			if (errno == EUCLEAN)
				*status = worst(*status, damaged(seen.v[i].id));
			else if (errno != ENOENT) {	/* purged meanwhile */
				say("%s: %s", seen.v[i].id, errtext(errno));
				*status = worst(*status, EXIT_TEMP);
			}
			continue;
		}
		if (info.state == state && match(arg, &info))
			picks_add(l, info.id, strlen(info.id), info.since,
			    status);
		spool_job_info_free(&info);
	}
	picks_free(&seen);
}

/*
 * Act on every ID of l, SPOOL_BATCH_MAX at a time, each item guarded by
 * before (0: not guarded); print the IDs done and report the others, and
 * return the worst status.  act fills in each item's result; -1 from it
 * is a failure of the whole call.
 */
int
in_batches(const struct picks *l, int64_t before,
    int (*act)(void *arg, struct spool_item *items, size_t n), void *arg)
{
	struct spool_item *items;
	size_t i, k, n;
	int status = EXIT_DONE;

	if ((items = calloc(SPOOL_BATCH_MAX, sizeof(*items))) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	for (i = 0; i < l->n; i += n) {
		n = l->n - i < SPOOL_BATCH_MAX ? l->n - i : SPOOL_BATCH_MAX;
		for (k = 0; k < n; k++) {
			items[k].id = l->v[i + k].id;
			items[k].before = before;
		}
		if (act(arg, items, n) == -1)
			die(EXIT_TEMP, "%s", strerror(errno));
		progress_hide();
		for (k = 0; k < n; k++) {
			if (items[k].res.status == 0)
				printf("%s\n", items[k].id);
			status = worst(status, report(items[k].id,
			    &items[k].res));
		}
		(void)fflush(stdout);	/* the IDs before the count */
		progress_show(NULL, i + n, l->n);
	}
	progress_erase();
	free(items);
	return status;
}

/*
 * What an action on item would answer, for a dry run, without taking it:
 * refused unless the job is unchanged since item->before, is in from
 * (refusal otherwise), with need_reconciled is not flagged as having maybe
 * had its side effect, and with need_unedited has the payload its record
 * describes (read whole, as the redrive would); checked in the library's
 * order.
 */
void
preview(struct spool *sp, struct spool_item *item, enum spool_state from,
    int refusal, int need_reconciled, int need_unedited)
{
	struct spool_result *res = &item->res;
	struct spool_job_info info;

	memset(res, 0, sizeof(*res));
	if (spool_job_info(sp, item->id, 0, &info) == -1) {
		res->status = errno == ENOENT ? 1 : -1;
		res->refusal = SPOOL_NO_JOB;
		res->err = errno;
		return;
	}
	res->state = info.state;
	res->token = info.token;
	if (item->before != 0 && info.since >= item->before)
		res->refusal = SPOOL_NO_CHANGED;
	else if (info.state != from)
		res->refusal = refusal;
	else if (need_reconciled && info.side_effect)
		res->refusal = SPOOL_NO_UNRECONCILED;
	else if (need_unedited && spool_payload_check(sp, item->id, 1) == 0)
		res->refusal = SPOOL_NO_EDITED;
	res->status = res->refusal != SPOOL_NO_NONE;
	spool_job_info_free(&info);
}
