/*
 * The listings: every job of a state, named or looked at, for spool-ls,
 * spool-stat and spool_list_jobs().  A listing looks at each job once,
 * without the lock: its sidecar opened read-only, read in one read(2)
 * and closed, and its file found with one lstat in a directory already
 * open.  What a reader without the lock may see, and why this is enough,
 * is in spool-layout.md, "Readers".  Whatever this look cannot settle by
 * itself (a void record, a file elsewhere than the last record says, an
 * empty or odd sidecar, a mode taken away) goes to spool_job_info, which
 * takes the shared lock: the answer is the same, it only costs more.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <dirent.h>
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
 * The job's file: named file in dirfd, or with dirfd -1 where the last
 * record puts it (place_stat, through the leaves kept open).
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

struct lister {
	int (*fn)(void *arg, const char *id, const char *file);
	int (*jobfn)(void *arg, const char *id, const char *file,
	    const struct spool_job_info *in);
	void *arg;
	struct spool *sp;
	enum spool_state state;
	int history;
	int64_t start;		/* listing new/: the leaf bucket's */
	int loose;		/* listing the top of new/ (list_loose) */
	int stop;
};

/* One name: to fn, or looked at and to jobfn. */
static int
list_one(struct lister *l, int dirfd, const char *id, const char *file)
{
	struct spool_job_info in;
	int rv, e;

	if (l->jobfn == NULL)
		return l->fn(l->arg, id, file);
	memset(&in, 0, sizeof(in));
	if (look_job(l->sp, l->state, dirfd, l->start, id, file,
	    l->history, &in) == -1) {
		e = errno;
		/*
		 * Its file not at its place, or not readable: seen here all
		 * the same, as a hand put it (spool_list_jobs).
		 */
		if (e == EUCLEAN && l->state != SPOOL_ABSENT &&
		    (in.damage == SPOOL_DAMAGE_MISSING ||
		    in.damage == SPOOL_DAMAGE_UNREADABLE)) {
			rv = l->jobfn(l->arg, id, file, &in);
			spool_job_info_free(&in);
			return rv;
		}
		spool_job_info_free(&in);	/* a damaged job's history */
		errno = e;
		return l->jobfn(l->arg, id, file, NULL);
	}
	/* At the top of new/, a job whose file is at its place: a copy. */
	rv = l->loose ? 0 : l->jobfn(l->arg, id, file, &in);
	spool_job_info_free(&in);
	return rv;
}

/* Hand every job name in dirfd to the lister: "ID" or "ID,NUMBER". */
static int
list_dir(int dirfd, int numbered, struct lister *l)
{
	char id[SPOOL_ID_MAX + 1];
	struct dirent *de;
	uint64_t v;
	struct dlist *d;
	int rv = 0;

	if ((d = dir_list(dirfd)) == NULL)
		return -1;
	while (rv == 0 && (errno = 0, de = dir_next(d)) != NULL) {
		if (numbered ? parse_leased_name(de->d_name, id, &v) == -1 :
		    !spool_valid_id(de->d_name))
			continue;
		rv = list_one(l, dirfd, numbered ? id : de->d_name,
		    de->d_name);
	}
	if (rv == 0 && errno != 0)
		rv = -1;
	dir_close(d);
	l->stop = rv;
	return rv;
}

/*
 * The files a hand put at the top of new/, where only buckets belong:
 * "ID", or "ID,NUMBER" from a bucket or leased/.  Directories are the
 * buckets.
 */
static int
list_loose(struct spool *sp, struct lister *l)
{
	char id[SPOOL_ID_MAX + 1];
	struct dirent *de;
	struct stat st;
	uint64_t v;
	struct dlist *d;
	int rv = 0;

	if ((d = dir_list(sp->newfd)) == NULL)
		return -1;
	l->start = -1;	/* no bucket: never the job's place */
	l->loose = 1;
	while (rv == 0 && (errno = 0, de = dir_next(d)) != NULL) {
		if (de->d_type != DT_REG && (de->d_type != DT_UNKNOWN ||
		    fstatat(sp->newfd, de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1 || !S_ISREG(st.st_mode)))
			continue;
		if (spool_valid_id(de->d_name))
			rv = list_one(l, sp->newfd, de->d_name, de->d_name);
		else if (parse_leased_name(de->d_name, id, &v) == 0)
			rv = list_one(l, sp->newfd, id, de->d_name);
	}
	if (rv == 0 && errno != 0)
		rv = -1;
	dir_close(d);
	return rv;
}

static int
list_leaf(void *arg, int leaffd, int64_t start)
{
	struct lister *l = arg;

	l->start = start;
	return list_dir(leaffd, 1, l);
}

static int
list_state(struct spool *sp, struct lister *l)
{
	switch (l->state) {
	case SPOOL_NEW:
		if (bucket_walk(sp, INT64_MAX, 0, list_leaf, l) == -1)
			return -1;
		if (l->stop != 0 || l->jobfn == NULL)
			return l->stop;
		return list_loose(sp, l);
	case SPOOL_LEASED:
		return list_dir(sp->leasedfd, 1, l);
	case SPOOL_DONE:
		return list_dir(sp->donefd, 0, l);
	case SPOOL_DEAD:
		return list_dir(sp->deadfd, 0, l);
	case SPOOL_ABSENT:
		return list_dir(sp->metafd, 0, l);	/* every sidecar */
	default:
		errno = EINVAL;
		return -1;
	}
}

int
spool_list(struct spool *sp, enum spool_state state,
    int (*fn)(void *arg, const char *id, const char *file), void *arg)
{
	struct lister l = { .fn = fn, .arg = arg, .sp = sp, .state = state };

	return list_state(sp, &l);
}

int
spool_list_jobs(struct spool *sp, enum spool_state state, int history,
    int (*fn)(void *arg, const char *id, const char *file,
    const struct spool_job_info *info), void *arg)
{
	struct lister l = { .jobfn = fn, .arg = arg, .sp = sp, .state = state,
	    .history = history };
	int rv, e;

	/* meta/'s walk finds each file where its record says: keep leaves */
	if (state == SPOOL_ABSENT) {
		buckets_hold(sp);
		buckets_widen(sp);
	}
	rv = list_state(sp, &l);
	e = errno;
	if (state == SPOOL_ABSENT)
		buckets_drop(sp);
	errno = e;
	return rv;
}

/*
 * Is there a sidecar for id?  Its name and size alone are looked at: an
 * emptied one holds no record, and is as good as lost (a job's file is
 * published only after its first record is on disk).
 */
static int
has_sidecar(struct spool *sp, const char *id)
{
	struct stat st;

	if (fstatat(sp->metafd, id, &st, 0) == -1)
		return errno != ENOENT;
	return st.st_size > 0;
}

/* The IDs of one state's files that had no sidecar when listed. */
struct orphans {
	struct spool *sp;
	char **ids;
	size_t n, cap;
	long still;		/* listed again: still without a sidecar */
};

/* A job's file, named in a listing: counted. */
static int
count_file(void *arg, const char *id, const char *file)
{
	(void)id;
	(void)file;
	(*(long *)arg)++;
	return 0;
}

static int
add_orphan(void *arg, const char *id, const char *file)
{
	struct orphans *o = arg;
	char **v;

	(void)file;
	if (has_sidecar(o->sp, id))
		return 0;
	if (o->n == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 16;
		if ((v = realloc(o->ids, o->cap * sizeof(*v))) == NULL)
			return -1;
		o->ids = v;
	}
	return (o->ids[o->n++] = strdup(id)) == NULL ? -1 : 0;
}

/*
 * A file that was listed while its sidecar was gone: a lost sidecar, or
 * a purge that went by (it removes the file, then the sidecar).  Listed
 * again, still there and still without one, it is an orphan.
 */
static int
recount_orphan(void *arg, const char *id, const char *file)
{
	struct orphans *o = arg;
	size_t i;

	(void)file;
	for (i = 0; i < o->n; i++)
		if (o->ids[i] != NULL && strcmp(o->ids[i], id) == 0 &&
		    !has_sidecar(o->sp, id)) {
			o->still++;
			free(o->ids[i]);
			o->ids[i] = NULL;	/* once */
		}
	return 0;
}

/*
 * One state's orphans; seen: its jobs by their sidecars, or -1.  A state
 * whose directory holds as many files as sidecars put there holds none
 * without one: only another count (files left over, or jobs that moved
 * during the walk) asks after each file's sidecar.
 */
static long
state_orphans(struct spool *sp, enum spool_state state, long seen)
{
	struct orphans o = { .sp = sp };
	long files = 0;
	size_t i;
	int rv = 0;

	if (seen >= 0 && (rv = spool_list(sp, state, count_file, &files)) ==
	    0 && files == seen)
		return 0;
	if (rv == 0 && (rv = spool_list(sp, state, add_orphan, &o)) == 0 &&
	    o.n > 0)
		rv = spool_list(sp, state, recount_orphan, &o);
	for (i = 0; i < o.n; i++)
		free(o.ids[i]);
	free(o.ids);
	return rv == -1 ? -1 : o.still;
}

/* Files at the top of new/, where only buckets belong, no sidecar names. */
static long
loose_in_new(struct spool *sp)
{
	char id[SPOOL_ID_MAX + 1];
	struct dirent *de;
	struct stat st;
	size_t len;
	long n = 0;
	struct dlist *d;

	if ((d = dir_list(sp->newfd)) == NULL)
		return -1;
	while ((errno = 0, de = dir_next(d)) != NULL) {
		if (fstatat(sp->newfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
		    -1 || S_ISDIR(st.st_mode))
			continue;
		len = strcspn(de->d_name, ",");
		if (len > SPOOL_ID_MAX)
			len = 0;
		memcpy(id, de->d_name, len);
		id[len] = '\0';
		n += !spool_valid_id(id) || !has_sidecar(sp, id);
	}
	dir_close(d);
	return errno != 0 ? -1 : n;
}

/* Files in quarantine/; none if there is no quarantine/. */
static long
quarantined(struct spool *sp)
{
	struct dirent *de;
	long n = 0;
	struct dlist *d;
	int fd;

	fd = sys_openat(sp->dirfd, "quarantine", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	if ((d = dir_adopt(fd)) == NULL)
		return -1;
	while ((errno = 0, de = dir_next(d)) != NULL)
		n += de->d_name[0] != '.';
	dir_close(d);
	return errno != 0 ? -1 : n;
}

int
spool_census(struct spool *sp, const long *seen, struct spool_census *c)
{
	enum spool_state s;
	long n;

	memset(c, 0, sizeof(*c));
	for (s = SPOOL_NEW; s <= SPOOL_DEAD; s++) {
		if ((n = state_orphans(sp, s, seen != NULL ? seen[s] : -1)) ==
		    -1)
			return -1;
		c->orphans += n;
	}
	if ((c->loose = loose_in_new(sp)) == -1 ||
	    (c->quarantined = quarantined(sp)) == -1)
		return -1;
	return 0;
}
