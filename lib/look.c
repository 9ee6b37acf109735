/*
 * The listings' look at a job: its sidecar opened read-only, read in one
 * read(2) and closed, with no lock, and its file found with one lstat in a
 * directory already open.  What a reader without the lock may see, and why
 * this is enough, is in spool-layout.md, "Readers".  Whatever this look
 * cannot settle by itself (a void record, a file elsewhere than the last
 * record says, an empty or odd sidecar, a mode taken away) goes to
 * spool_job_info, which takes the shared lock: the answer is the same, it
 * only costs more.
 */
#define _GNU_SOURCE
#include <sys/resource.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/*
 * A sidecar is a few hundred bytes a record: a look reads it into the
 * caller's buffer, and one that does not fit is read on, in a buffer of
 * its own twice as large each time.
 */
#define LOOK_BUF	4096

/*
 * Read the sidecar of id whole and fold it: 1 if it was read, 0 if this
 * look cannot tell (gone, empty, not a plain file, a record it cannot
 * parse: job_read says which), -1 on error.  lock: 0, the sidecar closed
 * at once; or LOCK_SH, held (j->fd) until job_close.  buf (cap bytes) is
 * where it is read first: j->text is buf, or memory to free.  A read
 * shorter than asked is the end of a regular file: what an append still
 * under way has not written yet is not seen (spool-layout.md, "Readers").
 */
static int
look_read(struct spool *sp, const char *id, int lock, struct job *j,
    char *buf, size_t cap)
{
	size_t len = 0, n;
	ssize_t got;
	char *p;
	int fd, e;

	memset(j, 0, offsetof(struct job, pending));
	j->fd = -1;
	j->text = buf;
	n = strnlen(id, sizeof(j->id) - 1);	/* as snprintf would */
	memcpy(j->id, id, n);
	j->id[n] = '\0';
	fd = sys_openat(sp->metafd, id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK, 0);
	if (fd == -1)
		return 0;
	if (lock != 0 && sys_flock(sp, fd, lock) == -1)
		goto fail;
	for (;;) {
		do
			got = read(fd, j->text + len, cap - len);
		while (got == -1 && errno == EINTR);
		if (got == -1 || (got == 0 && len == 0)) {
			(void)close_fd(fd);	/* read-only */
			return 0;	/* empty, or not a file: a directory? */
		}
		len += (size_t)got;
		if (got == 0 || len < cap)
			break;
		if ((p = malloc(cap * 2)) == NULL)
			goto fail;
		memcpy(p, j->text, len);
		if (j->text != buf)
			free(j->text);
		j->text = p;
		cap *= 2;
	}
	if (lock != 0)
		j->fd = fd;
	else
		(void)close_fd(fd);	/* read-only */
	j->textlen = len;
	if (fold_records(j, j->text, len) == -1)
		return errno == EUCLEAN ? 0 : -1;
	return 1;
fail:
	e = errno;
	(void)close_fd(fd);
	errno = e;
	return -1;
}

/*
 * The buckets of new/ a walk of meta/ keeps open, by slot: leaves, and
 * the middle level they are opened from.  Open with O_PATH, for lstat and
 * openat only.
 */
#define LEAVES	4096
#define MIDS	16

struct look {
	uint64_t slot[LEAVES], mslot[MIDS];
	int fd[LEAVES], mfd[MIDS];	/* -1: none */
	int n;			/* leaves held at most: the fd limit allows */
};

struct look *
look_new(void)
{
	struct look *lk;
	struct rlimit rl;
	int i;

	if ((lk = malloc(sizeof(*lk))) == NULL)
		return NULL;
	for (i = 0; i < LEAVES; i++)
		lk->fd[i] = -1;
	for (i = 0; i < MIDS; i++)
		lk->mfd[i] = -1;
	/* A quarter of the descriptors this process may have, at most. */
	lk->n = LEAVES;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 4 < LEAVES + MIDS)
		lk->n = (int)(rl.rlim_cur / 4) - MIDS;
	return lk;
}

void
look_free(struct look *lk)
{
	int i;

	if (lk == NULL)
		return;
	for (i = 0; i < LEAVES; i++)
		if (lk->fd[i] != -1)
			(void)close_fd(lk->fd[i]);	/* read-only */
	for (i = 0; i < MIDS; i++)
		if (lk->mfd[i] != -1)
			(void)close_fd(lk->mfd[i]);	/* read-only */
	free(lk);
}

/* Open dir in dirfd for lookups, never through a symlink. */
static int
look_dir(int dirfd, const char *dir)
{
	return sys_openat(dirfd, dir, O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC, 0);
}

/* Keep fd in *slot, closing the one it replaces. */
static int
look_keep(int *slot, int fd)
{
	if (*slot != -1)
		(void)close_fd(*slot);	/* read-only */
	return *slot = fd;
}

/*
 * The leaf bucket of eligible, opened one level at a time as open_bucket
 * does, and kept; -1 if there is none (or no room to keep it).
 */
int
look_leaf(struct spool *sp, struct look *lk, int64_t eligible)
{
	uint64_t slot = (uint64_t)eligible >> SLOT_SHIFT, mid = slot >> 12;
	char rel[NAME_MAX_SPOOL], *midname, *leafname;
	int i, m, fd;

	if (lk == NULL || lk->n < 1)
		return -1;
	i = (int)(slot % (uint64_t)lk->n);
	if (lk->fd[i] != -1 && lk->slot[i] == slot)
		return lk->fd[i];
	/* rel: top/mid/leaf, split in three */
	if (bucket_rel(rel, sizeof(rel), eligible) == -1 ||
	    (midname = strchr(rel, '/')) == NULL ||
	    (leafname = strchr(midname + 1, '/')) == NULL)
		return -1;
	*midname++ = *leafname++ = '\0';
	m = (int)(mid % MIDS);
	if (lk->mfd[m] == -1 || lk->mslot[m] != mid) {
		if ((fd = look_dir(sp->newfd, rel)) == -1)
			return -1;
		(void)look_keep(&lk->mfd[m], look_dir(fd, midname));
		(void)close_fd(fd);	/* read-only */
		if (lk->mfd[m] == -1)
			return -1;
		lk->mslot[m] = mid;
	}
	if ((fd = look_dir(lk->mfd[m], leafname)) == -1)
		return -1;
	lk->slot[i] = slot;
	return look_keep(&lk->fd[i], fd);
}

/*
 * The job's file: named file in dirfd, or with dirfd -1 where the last
 * record puts it (place_stat, through the buckets sp->look holds open).
 * 1 if it is there, a regular file that may be read.
 */
static int
look_file(struct spool *sp, struct job *j, int dirfd, const char *file)
{
	struct stat st;

	if (dirfd == -1 ? place_stat(sp, j->id, &j->cur, &st) != 1 :
	    fstatat(dirfd, file, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !S_ISREG(st.st_mode))
		return 0;
	if ((st.st_mode & 0444) == 0)
		return 0;
	j->dev = st.st_dev;
	j->ino = st.st_ino;
	j->fmode = st.st_mode;
	j->fsize = st.st_size;
	return 1;
}

/*
 * What spool_job_info(id) says, for a job seen in a listing.  state, dirfd
 * and file: where the listing saw it (start: for new/, the first
 * millisecond of the leaf bucket dirfd); the look settles the job when its
 * last record names exactly that file and the file is there.  state
 * SPOOL_ABSENT: seen in meta/; the file is looked for where the last
 * record says.
 */
int
look_job(struct spool *sp, enum spool_state state,
    int dirfd, int64_t start, const char *id, const char *file, int history,
    struct spool_job_info *in)
{
	char name[NAME_MAX_SPOOL], buf[LOOK_BUF];
	struct job j;
	int r, e;

	if ((r = look_read(sp, id, 0, &j, buf, sizeof(buf))) == 1) {
		if (j.cur.loc == SPOOL_ABSENT)
			r = 0;	/* no job: spool_job_info says why */
		else if (state == SPOOL_ABSENT)
			r = look_file(sp, &j, -1, NULL);
		else if ((int)state == j.cur.loc && (state != SPOOL_NEW ||
		    (uint64_t)j.cur.eligible >> SLOT_SHIFT ==
		    (uint64_t)start >> SLOT_SHIFT) &&
		    place_name(name, sizeof(name), id, &j.cur) == 0 &&
		    strcmp(name, file) == 0)
			r = look_file(sp, &j, dirfd, file);
		else
			r = 0;
		if (r == 1)	/* 2: settled here */
			r = info_fill(sp, &j, j.cur.ev, history, in) == 0 ?
			    2 : errno == EUCLEAN ? 0 : -1;
	}
	e = errno;
	free(j.finishes);
	if (j.text != buf)
		free(j.text);
	errno = e;
	if (r == 2)
		return 0;
	if (r == -1)
		return -1;
	return spool_job_info(sp, id, history, in);
}

/*
 * job_read(sp, id, LOCK_SH, j) for a reader that holds the job while it
 * looks (spool-fsck): the sidecar opened, locked and read whole in one
 * read; one this look cannot tell (empty, not a plain file) is read by
 * job_read, which says what it is.
 */
int
look_locked(struct spool *sp, const char *id, struct job *j)
{
	char buf[LOOK_BUF];
	int r;

	/* The job outlives this frame: its text is copied out of buf. */
	r = look_read(sp, id, LOCK_SH, j, buf, sizeof(buf));
	if (j->text == buf) {
		j->text = NULL;
		if (r == 1 && (j->text = malloc(j->textlen)) == NULL)
			r = -1;
		else if (r == 1)
			memcpy(j->text, buf, j->textlen);
	}
	if (r == 1)
		return 0;
	job_close(j);
	if (r == -1)
		return -1;
	return job_read(sp, id, LOCK_SH, j);
}
