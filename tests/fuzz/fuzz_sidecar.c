/*
 * A whole sidecar file through the library's read path.  The input becomes
 * meta/job-1 of a scratch spool; the job's file is then put, in turn,
 * nowhere, where the last effective record says, where the one before it
 * says, and in both places, and spool_job_info() (with and without the
 * history) and a read-only spool_fsck() run over each.  Besides no crash
 * and no leak: a sidecar the fold refuses is EUCLEAN, and otherwise the
 * outcome is the one spool-layout.md, "Crashes", predicts from where the
 * files are (the job is where its last record says if its file is there,
 * else where the record before says; ENOENT if that is nowhere, EUCLEAN
 * if the file is in neither place).
 */
#include "fuzz.h"

static const char id[] = "job-1";

/* Create the job's file where r puts it. */
static void
put_file(struct spool *sp, const struct rec *r)
{
	struct place p;
	int dirfd, fd;

	if (r->loc == SPOOL_NEW) {
		check(leaf_name(p.name, sizeof(p.name), id, r->eligible) == 0);
		check((dirfd = open_bucket(sp, r->eligible, 1)) != -1);
	} else {
		check(place_of(sp, id, r, &p) == 0);
		dirfd = p.dirfd;
	}
	fd = openat(dirfd, p.name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0444);
	check(fd != -1 || errno == EEXIST);
	if (fd != -1)
		check(close(fd) == 0);
	if (r->loc == SPOOL_NEW)
		check(close(dirfd) == 0);
}

/* Remove it again, and the buckets made for it. */
static void
drop_file(struct spool *sp, const struct rec *r)
{
	char rel[NAME_MAX_SPOOL], *slash;
	struct place p;

	if (r->loc != SPOOL_NEW) {
		check(place_of(sp, id, r, &p) == 0);
		(void)unlinkat(p.dirfd, p.name, 0);
		return;
	}
	check(bucket_rel(rel, sizeof(rel), r->eligible) == 0);
	if (place_of(sp, id, r, &p) == 0) {
		(void)unlinkat(p.dirfd, p.name, 0);
		place_done(&p);
	}
	do
		(void)unlinkat(sp->newfd, rel, AT_REMOVEDIR);
	while ((slash = strrchr(rel, '/')) != NULL && (*slash = '\0', 1));
}

static void
say(void *arg, const char *what, const char *problem, int fixed)
{
	(void)arg;
	check(what != NULL && problem != NULL && !fixed);
}

static void
check_info(const struct spool_job_info *in, size_t lines, int history)
{
	static const char *const ends[] = {
		"ok", "retry", "permanent", "release", "expired", "parked",
		"cancelled"
	};
	size_t i, k;

	check(in->state >= SPOOL_NEW && in->state <= SPOOL_DEAD);
	check(strcmp(in->id, id) == 0);
	check(strlen(in->trace) <= SPOOL_ID_MAX);
	check(strlen(in->detail) <= SPOOL_DETAIL_MAX);
	check(history || in->ndeliveries == 0);
	check(in->ndeliveries <= lines);
	for (i = 0; i < in->ndeliveries; i++) {
		const struct spool_delivery *d = &in->deliveries[i];

		if (d->end == NULL)
			continue;
		for (k = 0; k < sizeof(ends) / sizeof(ends[0]); k++)
			if (strcmp(d->end, ends[k]) == 0)
				break;
		check(k < sizeof(ends) / sizeof(ends[0]));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spool *sp = fuzz_spool();
	struct spool_job_info in, hist;
	struct rec cur, prev;
	const struct rec *want;
	struct job j;
	size_t lines = 0, i;
	int v, rc, rh, e, at_cur, at_prev;

	for (i = 0; i < size; i++)
		lines += data[i] == '\n';
	fuzz_write(sp->metafd, id, data, size);
	if (job_peek(sp, id, &j) == -1) {
		/* Only the fold refuses a regular file we could open. */
		check(errno == EUCLEAN || errno == ENOMEM);
		e = errno;
		check(spool_job_info(sp, id, 1, &hist) == -1 && errno == e);
		check(hist.deliveries == NULL);
		check(spool_fsck(sp, 0, say, NULL) == 1);
		return 0;
	}
	cur = j.cur;
	prev = j.prev;
	check(j.valid <= j.size && j.size == size);
	job_close(&j);

	for (v = 0; v < 4; v++) {
		/* Where the files are in this round. */
		if ((v & 1) && cur.loc != SPOOL_ABSENT)
			put_file(sp, &cur);
		if ((v & 2) && prev.loc != SPOOL_ABSENT)
			put_file(sp, &prev);
		at_cur = cur.loc != SPOOL_ABSENT && (((v & 1) != 0) ||
		    ((v & 2) != 0 && rec_same_place(&cur, &prev)));
		at_prev = prev.loc != SPOOL_ABSENT && (((v & 2) != 0) ||
		    ((v & 1) != 0 && rec_same_place(&cur, &prev)));
		if (cur.loc == SPOOL_ABSENT || at_cur)
			want = &cur;
		else if (prev.loc == SPOOL_ABSENT || at_prev)
			want = &prev;
		else
			want = NULL;	/* the job's file is nowhere */

		rc = spool_job_info(sp, id, 0, &in);
		e = errno;
		rh = spool_job_info(sp, id, 1, &hist);
		check(rc == rh && (rc == 0 || errno == e));
		if (rc == -1)
			check(e == ENOENT || e == EUCLEAN || e == ENOMEM);
		if (want == NULL)
			check(rc == -1 && e == EUCLEAN);
		else if (want->loc == SPOOL_ABSENT)
			/*
			 * No job (purged), or the last record's file is gone
			 * with no enqueue's payload in tmp/: damage.
			 */
			check(rc == -1 && e == (want == &cur ? ENOENT : EUCLEAN));
		else {
			check(rc == 0);
			check((int)in.state == want->loc);
			check(in.state == hist.state && in.since == hist.since);
			check(in.token == hist.token && in.token >= want->tok);
			check(in.attempts == want->att && in.cycles == want->cyc);
			check(in.state != SPOOL_NEW ||
			    in.eligible == want->eligible);
			check_info(&in, lines, 0);
			check_info(&hist, lines, 1);
		}
		spool_job_info_free(&in);
		spool_job_info_free(&hist);

		rc = spool_fsck(sp, 0, say, NULL);
		check(rc == 0 || rc == 1);

		if ((v & 1) && cur.loc != SPOOL_ABSENT)
			drop_file(sp, &cur);
		if ((v & 2) && prev.loc != SPOOL_ABSENT)
			drop_file(sp, &prev);
	}
	return 0;
}
