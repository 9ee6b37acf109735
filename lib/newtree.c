/*
 * new/ is a tree of buckets by eligible time, new/TTTTTTTT/MMM/LLL, each
 * level at most 4096 entries, so that a claim reads a few small
 * directories however deep the backlog is (spool-layout.md, "The new/
 * tree").  This file opens buckets one component at a time, never through
 * a symlink; keeps the leaves a call uses open, in one cache; puts files
 * into the tree; and walks it in time order, pruning empty buckets whose
 * time is past.
 */
#define _GNU_SOURCE
#include <sys/resource.h>
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
 * Open a directory below new/ one component at a time, never following a
 * symlink.  With create, missing components are made (the caller makes
 * their names durable: publish_new).
 */
int
open_bucket(struct spool *sp, int64_t eligible, int create)
{
	char rel[NAME_MAX_SPOOL], *part, *slash;
	int fd = sp->newfd, next, e;

	if (bucket_rel(rel, sizeof(rel), eligible) == -1)
		return -1;
	for (part = rel; part != NULL; part = slash) {
		if ((slash = strchr(part, '/')) != NULL)
			*slash++ = '\0';
		next = sys_openat(fd, part,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
		if (next == -1 && errno == ENOENT && create) {
			if (mkdir_mode(sp, fd, part) == -1 && errno != EEXIST)
				goto fail;
			next = sys_openat(fd, part,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
		}
		if (next == -1)
			goto fail;
		if (fd != sp->newfd)
			(void)close_fd(fd);	/* read-only directory */
		fd = next;
	}
	return fd;
fail:
	e = errno;
	if (fd != sp->newfd)
		(void)close_fd(fd);
	errno = e;
	return -1;
}

/*
 * The leaf buckets kept open: one cache, sp->buckets, for every call.  A
 * transition holds it (buckets_hold to buckets_drop) for the few leaves
 * its jobs share, each of which would otherwise be opened one component
 * at a time for every look and move.  A walk of every job (a listing of
 * meta/, spool-fsck) widens it to thousands (buckets_widen).  No
 * descriptor outlives the outermost hold.
 *
 * It is four-way set-associative: a leaf's slot picks a set of four
 * entries, and a leaf opened there takes the place of the set's least
 * recently used.  So a descriptor handed out stays open until three
 * other leaves of its set have been opened since: a move may hold the
 * leaf it moves from while it opens the leaf it moves to.
 *
 * A leaf kept may have been pruned, and made again, since it was opened.
 * Where a file is not found in it, one lstat of its path tells whether it
 * is still the leaf there (leaf_current), and if not it is opened again
 * (place_again); a move into it that finds it gone opens it again
 * (leaf_stale).  In multi-host mode none is kept: another host may prune
 * a leaf this one holds, and a network file system answers a descriptor
 * of a removed directory with ESTALE, not ENOENT, and may give its inode
 * number to the leaf made again.
 */
#define WAYS		4
#define NARROW		4	/* a transition's: one set */
#define WIDE		4096	/* a walk of every job's, at most */

void
buckets_hold(struct spool *sp)
{
	struct buckets *bs = &sp->buckets;
	size_t i;

	if (sp->multi_host || bs->held++ > 0)
		return;
	if ((bs->e = calloc(NARROW, sizeof(*bs->e))) == NULL)
		return;		/* nothing kept: slower, not wrong */
	bs->n = NARROW;
	for (i = 0; i < bs->n; i++)
		bs->e[i].fd = -1;
}

/* Close every leaf kept, and forget them. */
static void
buckets_clear(struct buckets *bs)
{
	size_t i;

	for (i = 0; i < bs->n; i++)
		if (bs->e[i].fd != -1)
			(void)close_fd(bs->e[i].fd);	/* read-only */
	free(bs->e);
	bs->e = NULL;
	bs->n = 0;
}

void
buckets_drop(struct spool *sp)
{
	if (sp->multi_host || --sp->buckets.held > 0)
		return;
	buckets_clear(&sp->buckets);
}

/*
 * A walk of every job, under a hold: keep up to WIDE leaves, and at most
 * a quarter of the descriptors this process may have.  Nothing kept is in
 * use when a walk begins.
 */
void
buckets_widen(struct spool *sp)
{
	struct buckets *bs = &sp->buckets;
	struct bucket *e;
	struct rlimit rl;
	size_t n = WIDE, i;

	if (sp->multi_host || bs->held == 0 || bs->n >= WIDE)
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 4 < WIDE)
		n = rl.rlim_cur / 4 / WAYS * WAYS;
	if (n <= bs->n || (e = calloc(n, sizeof(*e))) == NULL)
		return;
	buckets_clear(bs);
	bs->e = e;
	bs->n = n;
	for (i = 0; i < n; i++)
		e[i].fd = -1;
}

void
buckets_free(struct spool *sp)
{
	buckets_clear(&sp->buckets);
	sp->buckets.held = 0;
}

/* The first entry of slot's set; NULL if nothing is kept. */
static struct bucket *
set_of(struct buckets *bs, uint64_t slot)
{
	if (bs->n == 0)
		return NULL;
	return &bs->e[slot % (bs->n / WAYS) * WAYS];
}

/* The entry that keeps fd, or NULL. */
static struct bucket *
kept_fd(struct buckets *bs, int fd)
{
	size_t i;

	for (i = 0; i < bs->n; i++)
		if (bs->e[i].fd == fd)
			return &bs->e[i];
	return NULL;
}

/* Close the leaf an entry keeps, and free the entry. */
static void
let_go(struct bucket *b)
{
	(void)close_fd(b->fd);	/* read-only */
	b->fd = -1;
}

static int
leaf_find(struct buckets *bs, uint64_t slot)
{
	struct bucket *set = set_of(bs, slot);
	int i;

	for (i = 0; set != NULL && i < WAYS; i++)
		if (set[i].fd != -1 && set[i].slot == slot) {
			set[i].used = ++bs->use;
			return set[i].fd;
		}
	return -1;
}

/* Keep fd, the leaf of slot, in place of its set's least recently used. */
static void
leaf_keep(struct buckets *bs, uint64_t slot, int fd)
{
	struct bucket *set = set_of(bs, slot), *b = set;
	int i;

	for (i = 1; i < WAYS; i++)
		if (set[i].fd == -1 || (b->fd != -1 && set[i].used < b->used))
			b = &set[i];
	if (b->fd != -1)
		(void)close_fd(b->fd);	/* read-only */
	b->slot = slot;
	b->fd = fd;
	b->used = ++bs->use;
	b->known = 0;
}

/*
 * The leaf bucket of eligible, as open_bucket opens it; or the one kept
 * open.  *owned: 1, the caller closes it; 0, kept, and found kept (it may
 * be stale); 2, kept, and opened just now.
 */
int
leaf_fd(struct spool *sp, int64_t eligible, int create, int *owned)
{
	uint64_t slot = (uint64_t)eligible >> SLOT_SHIFT;
	int fd;

	if ((fd = leaf_find(&sp->buckets, slot)) != -1) {
		*owned = 0;
		return fd;
	}
	if ((fd = open_bucket(sp, eligible, create)) == -1)
		return -1;
	*owned = 1;
	if (sp->buckets.n > 0) {
		leaf_keep(&sp->buckets, slot, fd);
		*owned = 2;
	}
	return fd;
}

/*
 * A kept leaf found gone (pruned since it was opened): close it.  1 if fd
 * was kept.
 */
int
leaf_stale(struct spool *sp, int fd)
{
	struct bucket *b = kept_fd(&sp->buckets, fd);

	if (b == NULL)
		return 0;
	let_go(b);
	return 1;
}

/* A leaf a walk of new/ opened (its first millisecond, start): kept too. */
void
leaf_seed(struct spool *sp, int64_t start, int fd)
{
	uint64_t slot = (uint64_t)start >> SLOT_SHIFT;
	int kept;

	if (sp->buckets.n == 0 || leaf_find(&sp->buckets, slot) != -1)
		return;
	if ((kept = fcntl(fd, F_DUPFD_CLOEXEC, 0)) != -1)
		leaf_keep(&sp->buckets, slot, kept);
}

/*
 * Is fd, a kept leaf of eligible, still the leaf that its path names?  1
 * if it is; 0 if not (pruned, perhaps made again: it is let go).  A look
 * that found no file in a kept leaf asks, with one lstat of its path.
 */
int
leaf_current(struct spool *sp, int64_t eligible, int fd)
{
	struct bucket *b = kept_fd(&sp->buckets, fd);
	char rel[NAME_MAX_SPOOL];
	struct stat st;

	if (b == NULL)
		return 1;	/* not kept: opened by this look */
	if (!b->known && fstat(fd, &st) == 0) {
		b->dev = st.st_dev;	/* the same for as long as */
		b->ino = st.st_ino;	/* fd stays open */
		b->known = 1;
	}
	if (b->known && bucket_rel(rel, sizeof(rel), eligible) == 0 &&
	    fstatat(sp->newfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev == b->dev && st.st_ino == b->ino)
		return 1;
	let_go(b);
	return 0;
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
list_level(struct walk *w, const char *rel, int dirfd, struct dlist *d,
    size_t width, uint64_t **out, size_t *n)
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
		dir_close(d);
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
		dir_close(d);
	return -1;
}

/*
 * One level of new/: its buckets in time order, each opened with
 * O_NOFOLLOW; the leaves are handed to w->leaf.  The slot bits that this
 * level names sit above `shift`; prefix holds those of the levels above.
 * d: dirfd's listing, NULL for new/ itself (a listing is made of it).
 */
static int
walk_level(struct walk *w, const char *rel, int dirfd, struct dlist *d, int level,
    uint64_t prefix)
{
	static const int shift[] = { 24, 12, 0 };
	uint64_t *v = NULL, slot;
	char name[32], sub[64];
	size_t n, i;
	int fd, rv = 0;
	int64_t start, end;
	struct dlist *sd;

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
			crash_point("leaf-opened");
			rv = w->leaf(w->arg, fd, start);
			(void)close_fd(fd);	/* read-only directory */
		} else if ((sd = dir_adopt(fd)) == NULL) {
			rv = -1;
		} else {	/* opened just now: sd lists from its start */
			rv = walk_level(w, sub, fd, sd, level + 1, slot);
			dir_close(sd);	/* and fd */
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
