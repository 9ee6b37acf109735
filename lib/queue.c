/*
 * new/ is a tree of buckets by eligible time, new/TTTTTTTT/MMM/LLL, each
 * level at most 4096 entries, so that a claim reads a few small directories
 * however deep the backlog is.  This file puts files into that tree and
 * collects the directories a call has to fsync before it returns.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int
dirset_add(struct dirset *ds, const char *rel)
{
	char **names;
	size_t i;

	for (i = 0; i < ds->n; i++)
		if (strcmp(ds->names[i], rel) == 0)
			return 0;
	if ((names = realloc(ds->names, (ds->n + 1) * sizeof(*names))) == NULL)
		return -1;
	ds->names = names;
	if ((ds->names[ds->n] = strdup(rel)) == NULL)
		return -1;
	ds->n++;
	return 0;
}

/*
 * The one wait of a transition (spool-layout.md, "Transitions"): every
 * sync it still needs, issued side by side and waited for once: files[]
 * (records, fdatasync; errs[i] is 0 or each one's errno, NULL when none),
 * each directory of ds (fsync, once per call however many moves went
 * there), and the audit lines buffered in ab, written first.  -1 if a
 * directory or the log failed: then nothing of the call is sure to be
 * durable.  The lines are gone from ab once they are.
 */
int
commit_sync(struct spool *sp, const int *files, size_t nfiles, int *errs,
    struct dirset *ds, struct abuf *ab)
{
	int *fds, *all, rv = 0, e = 0, logfd = -1, created = 0;
	size_t i, n = 0, nf = nfiles;

	fds = calloc(nfiles + ds->n + 1, sizeof(*fds));
	all = calloc(nfiles + ds->n + 1, sizeof(*all));
	if (fds == NULL || all == NULL) {
		rv = -1;
		e = errno;
		goto out;
	}
	for (i = 0; i < nfiles; i++)
		fds[n++] = files[i];
	if (ab != NULL && audit_write(sp, ab, &logfd, &created) == -1) {
		rv = -1;
		e = errno;
		goto out;
	}
	if (logfd != -1) {
		fds[n++] = logfd;
		nf++;
	}
	for (i = 0; i < ds->n; i++) {
		fds[n] = sys_openat(sp->dirfd, ds->names[i], O_RDONLY |
		    O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW, 0);
		if (fds[n] == -1) {
			rv = -1;
			e = errno;
			goto out;
		}
		n++;
	}
	(void)psync(sp, fds, n, n - nf, all);
	for (i = 0; i < n; i++)
		if (all[i] != 0 && (i >= nfiles || errs == NULL) && rv == 0) {
			rv = -1;
			e = all[i];
		}
	for (i = 0; errs != NULL && i < nfiles; i++)
		errs[i] = all[i];
out:
	for (i = nf; fds != NULL && i < n; i++)
		(void)close_fd(fds[i]);	/* directories: nothing to lose */
	if (logfd != -1 && rv == 0 && audit_done(sp, ab, logfd, created) == -1) {
		rv = -1;
		e = errno;
	} else if (logfd != -1 && rv == -1)
		(void)close_fd(logfd);
	free(fds);
	free(all);
	errno = e;
	return rv;
}

/* The directories of ds alone, synced side by side. */
int
dirset_sync(struct spool *sp, struct dirset *ds)
{
	if (ds->n == 1)
		return sync_dir(sp->dirfd, ds->names[0]);
	return ds->n == 0 ? 0 : commit_sync(sp, NULL, 0, NULL, ds, NULL);
}

void
dirset_free(struct dirset *ds)
{
	size_t i;

	for (i = 0; i < ds->n; i++)
		free(ds->names[i]);
	free(ds->names);
	ds->names = NULL;
	ds->n = 0;
}

/*
 * The bucket path rel ("new/T/M/L") and each directory above it, up to
 * new/: all are synced in the wait of a move into the leaf, made by us or
 * found, for a bucket found may be one that another producer has just made
 * and not yet synced (spool-layout.md, "The new/ tree").
 */
static int
dirset_path(struct dirset *ds, char *rel)
{
	char *slash = rel;

	while ((slash = strchr(slash, '/')) != NULL) {
		*slash = '\0';
		if (dirset_add(ds, rel) == -1) {
			*slash = '/';
			return -1;
		}
		*slash++ = '/';
	}
	return dirset_add(ds, rel);
}

/*
 * Move a file into its bucket in new/, and add the bucket's path to ds.  A
 * claimer removes a bucket once it is empty and its time has passed; if
 * that happens between our opening or making a bucket (or the call's
 * keeping it open) and our rename, we get ENOENT (ESTALE on a network file
 * system): make the bucket again.
 */
int
publish_new(struct spool *sp, int fromfd, const char *from, const char *id,
    int64_t eligible, struct dirset *ds)
{
	char name[NAME_MAX_SPOOL], rel[NAME_MAX_SPOOL];
	struct stat st;
	int fd, r, e, tries, owned;

	if (leaf_name(name, sizeof(name), id, eligible) == -1 ||
	    bucket_rel(rel + 4, sizeof(rel) - 4, eligible) == -1)
		return -1;
	memcpy(rel, "new/", 4);
	for (tries = 0; tries < 100; tries++) {
		if ((fd = leaf_fd(sp, eligible, 1, &owned)) == -1) {
			if (errno == ENOENT || errno == ESTALE)
				continue;
			return -1;
		}
		r = move_noreplace(fromfd, from, fd, name);
		e = errno;
		if (owned == 1)
			(void)close_fd(fd);	/* read-only directory */
		if (r == 0)
			return dirset_path(ds, rel);
		if ((e != ENOENT && e != ESTALE) ||
		    fstatat(fromfd, from, &st, AT_SYMLINK_NOFOLLOW) == -1) {
			errno = e;
			return -1;
		}
		if (owned != 1)
			(void)leaf_stale(sp, fd);	/* pruned: make it again */
	}
	errno = EAGAIN;
	return -1;
}

/*
 * Exponential backoff with jitter: the n-th retry waits between half and
 * all of min(backoff * 2^(n-1), backoff-max).  The jitter spreads a crowd
 * of failed jobs so that they do not return all at once.
 */
int64_t
backoff_ms(struct spool *sp, int attempt)
{
	static __thread uint64_t seed;
	int64_t d = sp->backoff_ms;
	int i;

	for (i = 1; i < attempt && d < sp->backoff_max_ms; i++)
		d *= 2;
	if (d > sp->backoff_max_ms)
		d = sp->backoff_max_ms;
	if (d < 2)
		return d;
	if (seed == 0)
		seed = (uint64_t)now_ms() * 2654435761u ^ (uint64_t)getpid();
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return d / 2 + (int64_t)(seed % (uint64_t)(d / 2 + 1));
}

/*
 * ms before an empty past bucket goes.  Every claim lists each empty leaf
 * still kept, so a long grace costs every claim (2 s of leaves made a
 * library cycle take 1.3 ms more CPU than 200 ms of them, and 200 ms of
 * them 0.08 ms more a claim than 32 ms).  It spares a leaf only while
 * its time is near: a producer moves into the leaf of the time its call
 * began, which a long call (a large payload, a batch) may have passed by
 * seconds.  Such a leaf is empty only between its opening for the move
 * and the first rename into it; one pruned in that instant is made again
 * (publish_new).
 */
#define BUCKET_GRACE	32

struct walk {
	int64_t until, prune_now;
	int (*leaf)(void *arg, int leaffd, int64_t start);
	int (*stray)(void *arg, const char *dir, const char *name);
	void *arg;
};

/*
 * Names of a bucket level: fixed-width lowercase hex, sorted.  Any other
 * name is not ours: w->stray (spool-fsck) hears of it, if it listens.
 * d lists dirfd: a listing of it that starts at its first entry, or, if
 * d is NULL, one made here.
 */
static int
list_level(struct walk *w, const char *rel, int dirfd, DIR *d, size_t width,
    uint64_t **out, size_t *n)
{
	struct dirent *de;
	uint64_t *v = NULL, *nv, x;
	size_t cap = 0, i;
	int ok, own = d == NULL;
	char *end;

	*n = 0;
	if (own && (d = dir_list(dirfd)) == NULL)
		return -1;
	while ((errno = 0, de = dir_next(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		ok = strlen(de->d_name) == width;
		for (i = 0; ok && i < width; i++)
			ok &= (de->d_name[i] >= '0' && de->d_name[i] <= '9') ||
			    (de->d_name[i] >= 'a' && de->d_name[i] <= 'f');
		if (!ok) {
			if (w->stray != NULL && w->stray(w->arg, rel,
			    de->d_name) == -1)
				goto fail;
			continue;
		}
		x = strtoull(de->d_name, &end, 16);
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((nv = realloc(v, cap * sizeof(*v))) == NULL)
				goto fail;
			v = nv;
		}
		v[(*n)++] = x;
	}
	if (errno != 0)
		goto fail;
	if (own)
		(void)closedir(d);	/* read-only */
	for (i = 1; i < *n; i++) {	/* insertion sort: lists are short */
		uint64_t key = v[i];
		size_t k = i;

		while (k > 0 && v[k - 1] > key) {
			v[k] = v[k - 1];
			k--;
		}
		v[k] = key;
	}
	*out = v;
	return 0;
fail:
	free(v);
	if (own)
		(void)closedir(d);
	return -1;
}

/*
 * One level of new/: its buckets in time order, each opened with
 * O_NOFOLLOW; the leaves are handed to w->leaf.  The slot bits that this
 * level names sit above `shift`; prefix holds those of the levels above.
 * d: dirfd's listing, NULL for new/ itself (a listing is made of it).
 */
static int
walk_level(struct walk *w, const char *rel, int dirfd, DIR *d, int level,
    uint64_t prefix)
{
	static const int shift[] = { 24, 12, 0 };
	uint64_t *v = NULL, slot;
	char name[32], sub[64];
	size_t n, i;
	int fd, rv = 0;
	int64_t start, end;
	DIR *sd;

	if (list_level(w, rel, dirfd, d, level == 0 ? 8 : 3, &v, &n) == -1)
		return -1;
	for (i = 0; i < n && rv == 0; i++) {
		slot = prefix | v[i] << shift[level];
		start = (int64_t)(slot << SLOT_SHIFT);
		end = (int64_t)((slot + ((uint64_t)1 << shift[level])) <<
		    SLOT_SHIFT);
		if (start > w->until) {
			rv = 1;
			break;
		}
		(void)snprintf(name, sizeof(name), level == 0 ? "%08" PRIx64 :
		    "%03" PRIx64, v[i]);
		fd = sys_openat(dirfd, name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC, 0);
		if (fd == -1) {
			/* Pruned by another claimer, or not a directory. */
			if (errno != ENOENT && errno != ENOTDIR &&
			    errno != ELOOP)
				rv = -1;	/* EIO and the like: not a stray */
			else if (errno != ENOENT && w->stray != NULL)
				rv = w->stray(w->arg, rel, name);
			continue;
		}
		(void)snprintf(sub, sizeof(sub), "%s/%s", rel, name);
		if (level == 2) {
			rv = w->leaf(w->arg, fd, start);
			(void)close_fd(fd);	/* read-only directory */
		} else if ((sd = fdopendir(fd)) == NULL) {
			rv = -1;
			(void)close_fd(fd);
		} else {	/* opened just now: sd lists from its start */
			rv = walk_level(w, sub, fd, sd, level + 1, slot);
			(void)closedir(sd);	/* and fd: read-only */
		}
		/* An empty bucket long past goes; one in use stays. */
		if (rv == 0 && w->prune_now != 0 &&
		    end + BUCKET_GRACE < w->prune_now)
			(void)sys_unlinkat(dirfd, name, AT_REMOVEDIR);
	}
	free(v);
	return rv;
}

/*
 * Visit the leaf buckets of new/ in time order, up to the first that starts
 * after until; leaf returns 0 to go on, 1 to stop, -1 on error.  Each level
 * holds at most 4096 names, so reaching the oldest jobs costs the same
 * however many are queued.  With prune_now, empty buckets that ended before
 * it (less a grace for producers) are removed on the way.
 */
int
bucket_walk(struct spool *sp, int64_t until, int64_t prune_now,
    int (*leaf)(void *arg, int leaffd, int64_t start), void *arg)
{
	struct walk w = { until, prune_now, leaf, NULL, arg };

	return walk_level(&w, "new", sp->newfd, NULL, 0, 0) == -1 ? -1 : 0;
}

/* The same walk for spool-fsck: every bucket, and every stray name. */
int
bucket_walk_all(struct spool *sp,
    int (*leaf)(void *arg, int leaffd, int64_t start),
    int (*stray)(void *arg, const char *dir, const char *name), void *arg)
{
	struct walk w = { INT64_MAX, 0, leaf, stray, arg };

	return walk_level(&w, "new", sp->newfd, NULL, 0, 0) == -1 ? -1 : 0;
}
