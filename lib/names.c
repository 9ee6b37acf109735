/*
 * Where a job's file is.  A state and the job's sidecar record name the file
 * exactly: new/TTTTTTTT/MMM/LLL/ID,ELIGIBLE, leased/ID,TOKEN, done/ID,
 * dead/ID.  Directories below new/ are opened one component at a time with
 * O_NOFOLLOW, so a symlink planted in the tree is never followed.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"


int
bucket_rel(char *buf, size_t len, int64_t eligible)
{
	uint64_t slot = (uint64_t)eligible >> SLOT_SHIFT;
	int r;

	r = snprintf(buf, len, "%08" PRIx64 "/%03x/%03x", slot >> 24,
	    (unsigned)(slot >> 12) & 0xfff, (unsigned)slot & 0xfff);
	if (r < 0 || (size_t)r >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* The first and last millisecond of a bucket named by its components. */
int64_t
bucket_start(uint64_t top, unsigned mid, unsigned leaf)
{
	return (int64_t)(((top << 24) | ((uint64_t)mid << 12) | leaf)
	    << SLOT_SHIFT);
}

/* "ID,ELIGIBLE", made by hand: every listing of new/ makes one a job. */
int
leaf_name(char *buf, size_t len, const char *id, int64_t eligible)
{
	char num[24], *p = num + sizeof(num);
	uint64_t v = eligible < 0 ? -(uint64_t)eligible : (uint64_t)eligible;
	size_t idlen = strlen(id), n;

	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	if (eligible < 0)
		*--p = '-';
	n = (size_t)(num + sizeof(num) - p);
	if (idlen + 1 + n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, id, idlen);
	buf[idlen] = ',';
	memcpy(buf + idlen + 1, p, n);
	buf[idlen + 1 + n] = '\0';
	return 0;
}

/* Split "ID,NUMBER"; the ',' is outside the ID alphabet. */
static int
split_name(const char *name, char *id, uint64_t *num)
{
	const char *comma = strrchr(name, ',');
	uint64_t v = 0;
	size_t len;
	const char *p;

	if (comma == NULL || (len = (size_t)(comma - name)) > SPOOL_ID_MAX ||
	    comma[1] == '\0' || strlen(comma + 1) > 19)
		return -1;
	for (p = comma + 1; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	memcpy(id, name, len);
	id[len] = '\0';
	if (!spool_valid_id(id) || v > INT64_MAX)
		return -1;
	*num = v;
	return 0;
}

int
parse_new_name(const char *name, char *id, int64_t *eligible)
{
	uint64_t v;

	if (split_name(name, id, &v) == -1)
		return -1;
	*eligible = (int64_t)v;
	return 0;
}

int
parse_leased_name(const char *name, char *id, uint64_t *token)
{
	return split_name(name, id, token);
}

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
 * The leaf buckets a transition keeps open while it runs (leaves_hold to
 * leaves_drop): the jobs of a batch share a few leaves, each of which would
 * otherwise be opened one component at a time for every look and move.  No
 * descriptor outlives the call.  A leaf kept may have been pruned, and made
 * again, since it was opened: where a file is not found in it, one lstat
 * of its path tells whether it is still the leaf there (leaf_current), and
 * if not it is opened again (place_again); a move into it that finds it
 * gone opens it again (leaf_stale).  A descriptor handed out stays open
 * until NKEPT - 1 other leaves have been opened: the least recently used
 * goes.  In multi-host mode none is kept: another host may prune a leaf
 * this one holds, and a network file system answers a descriptor of a
 * removed directory with ESTALE, not ENOENT, and may give its inode number
 * to the leaf made again.
 */
#define NKEPT	NELEM(((struct leaves *)NULL)->e)

/* The entry that keeps fd, or -1. */
static int
leaf_kept(const struct leaves *lv, int fd)
{
	int i;

	for (i = 0; i < NKEPT; i++)
		if (lv->e[i].used != 0 && lv->e[i].fd == fd)
			return i;
	return -1;
}

/* Close the leaf entry i keeps, and free the entry. */
static void
leaf_let_go(struct leaves *lv, int i)
{
	(void)close_fd(lv->e[i].fd);	/* read-only */
	lv->e[i].used = 0;
}

void
leaves_hold(struct spool *sp)
{
	if (!sp->multi_host)
		sp->leaves.held++;
}

void
leaves_drop(struct spool *sp)
{
	struct leaves *lv = &sp->leaves;
	int i;

	if (sp->multi_host || --lv->held > 0)
		return;
	for (i = 0; i < NKEPT; i++)
		if (lv->e[i].used != 0)
			leaf_let_go(lv, i);
}

static int
leaf_find(struct leaves *lv, uint64_t slot)
{
	int i;

	for (i = 0; i < NKEPT; i++)
		if (lv->e[i].used != 0 && lv->e[i].slot == slot) {
			lv->e[i].used = ++lv->use;
			return lv->e[i].fd;
		}
	return -1;
}

/* Keep fd, the leaf of slot, in place of the least recently used. */
static void
leaf_keep(struct leaves *lv, uint64_t slot, int fd)
{
	int i, k = 0;

	for (i = 1; i < NKEPT; i++)
		if (lv->e[i].used < lv->e[k].used)
			k = i;
	if (lv->e[k].used != 0)
		(void)close_fd(lv->e[k].fd);	/* read-only */
	lv->e[k].slot = slot;
	lv->e[k].fd = fd;
	lv->e[k].used = ++lv->use;
	lv->e[k].known = 0;
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

	if (sp->leaves.held > 0 && (fd = leaf_find(&sp->leaves, slot)) != -1) {
		*owned = 0;
		return fd;
	}
	if ((fd = open_bucket(sp, eligible, create)) == -1)
		return -1;
	*owned = 1;
	if (sp->leaves.held > 0) {
		leaf_keep(&sp->leaves, slot, fd);
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
	int i = leaf_kept(&sp->leaves, fd);

	if (i == -1)
		return 0;
	leaf_let_go(&sp->leaves, i);
	return 1;
}

/* A leaf a walk of new/ opened (its first millisecond, start): kept too. */
void
leaf_seed(struct spool *sp, int64_t start, int fd)
{
	uint64_t slot = (uint64_t)start >> SLOT_SHIFT;
	int kept;

	if (sp->leaves.held == 0 || leaf_find(&sp->leaves, slot) != -1)
		return;
	if ((kept = fcntl(fd, F_DUPFD_CLOEXEC, 0)) != -1)
		leaf_keep(&sp->leaves, slot, kept);
}

/*
 * Is fd, a kept leaf of eligible, still the leaf that its path names?  1
 * if it is; 0 if not (pruned, perhaps made again: it is let go).  A look
 * that found no file in a kept leaf asks, with one lstat of its path.
 */
int
leaf_current(struct spool *sp, int64_t eligible, int fd)
{
	struct leaves *lv = &sp->leaves;
	char rel[NAME_MAX_SPOOL];
	struct stat st;
	int i;

	if ((i = leaf_kept(lv, fd)) == -1)
		return 1;	/* not kept: opened by this look */
	if (!lv->e[i].known && fstat(fd, &st) == 0) {
		lv->e[i].dev = st.st_dev;	/* the same for as long as */
		lv->e[i].ino = st.st_ino;	/* fd stays open */
		lv->e[i].known = 1;
	}
	if (lv->e[i].known && bucket_rel(rel, sizeof(rel), eligible) == 0 &&
	    fstatat(sp->newfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev == lv->e[i].dev && st.st_ino == lv->e[i].ino)
		return 1;
	leaf_let_go(lv, i);
	return 0;
}

/* The name of the file that record r says the job has, in its directory. */
int
place_name(char *buf, size_t len, const char *id, const struct rec *r)
{
	int n;

	switch (r->loc) {
	case SPOOL_NEW:
		return leaf_name(buf, len, id, r->eligible);
	case SPOOL_LEASED:
		n = snprintf(buf, len, "%s,%" PRIu64, id, r->tok);
		break;
	case SPOOL_DONE:
	case SPOOL_DEAD:
		n = snprintf(buf, len, "%s", id);
		break;
	default:
		errno = ENOENT;
		return -1;
	}
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * The directory and name of the file that record r says the job has.  For
 * new/ the bucket is opened (or one kept open is used: p->kept, when it was
 * opened before, and may be stale), and closed by place_done; ENOENT if
 * the bucket does not exist.
 */
int
place_of(struct spool *sp, const char *id, const struct rec *r,
    struct place *p)
{
	const int fds[] = { -1, -1, sp->leasedfd, sp->donefd, sp->deadfd };
	int owned;

	p->close = p->kept = 0;
	if (place_name(p->name, sizeof(p->name), id, r) == -1)
		return -1;
	if (r->loc != SPOOL_NEW) {
		p->dirfd = fds[r->loc];
		return 0;
	}
	if ((p->dirfd = leaf_fd(sp, r->eligible, 0, &owned)) == -1)
		return -1;
	p->close = owned == 1;
	p->kept = owned == 0;
	return 0;
}

/*
 * p named no file: if p's leaf was kept open and is no longer the leaf
 * its path names, look again (1); else the file is not there (0).
 */
int
place_again(struct spool *sp, const char *id, const struct rec *r,
    struct place *p)
{
	int e = errno;

	if (!p->kept || leaf_current(sp, r->eligible, p->dirfd)) {
		errno = e;
		return 0;
	}
	p->kept = 0;
	return place_of(sp, id, r, p) == -1 ? -1 : 1;
}

/*
 * The same from the buckets sp->look holds open, for a file to be looked
 * at only: -1 if it holds none for r.  A file found there is where r says;
 * one not found may be in a bucket made since: look again with place_of.
 */
int
place_look(struct spool *sp, const char *id, const struct rec *r,
    struct place *p)
{
	p->close = p->kept = 0;
	if (sp->look == NULL || r->loc != SPOOL_NEW ||
	    place_name(p->name, sizeof(p->name), id, r) == -1 ||
	    (p->dirfd = look_leaf(sp, sp->look, r->eligible)) == -1)
		return -1;
	return 0;
}

void
place_done(struct place *p)
{
	if (p->close)
		(void)close_fd(p->dirfd);	/* read-only directory */
	p->close = 0;
}

/*
 * lstat of the file record r names: 1 present, 0 absent, -1 error.  A
 * bucket that sp->look holds open is looked in first: a file found there
 * is where it says (no entry is ever made in a bucket removed since it
 * was opened); one not found is looked for again by path.
 */
int
place_stat(struct spool *sp, const char *id, const struct rec *r,
    struct stat *st)
{
	struct place p;
	int rv, again;

	if (place_look(sp, id, r, &p) == 0 &&
	    fstatat(p.dirfd, p.name, st, AT_SYMLINK_NOFOLLOW) == 0)
		goto found;
	if (place_of(sp, id, r, &p) == -1)
		return errno == ENOENT ? 0 : -1;
	while ((rv = fstatat(p.dirfd, p.name, st, AT_SYMLINK_NOFOLLOW)) ==
	    -1 && errno == ENOENT) {
		if ((again = place_again(sp, id, r, &p)) != 1) {
			place_done(&p);
			return again == 0 || errno == ENOENT ? 0 : -1;
		}
	}
	place_done(&p);
	if (rv == -1)
		return -1;
found:
	if (!S_ISREG(st->st_mode)) {
		errno = EUCLEAN;	/* not ours: for spool-fsck */
		return -1;
	}
	return 1;
}

/*
 * fsync the directory that holds the file record r names (for new/, the
 * whole bucket chain, any link of which may be new): for a command that
 * finds a transition done by a process that died before making it durable.
 */
int
sync_place(struct spool *sp, const struct rec *r)
{
	char rel[NAME_MAX_SPOOL];
	char *slash;

	switch (r->loc) {
	case SPOOL_NEW:
		memcpy(rel, "new/", 4);
		if (bucket_rel(rel + 4, sizeof(rel) - 4, r->eligible) == -1)
			return -1;
		do {
			if (sync_dir(sp->dirfd, rel) == -1)
				return -1;
		} while ((slash = strrchr(rel, '/')) != NULL && (*slash = '\0',
		    1));
		return 0;
	case SPOOL_LEASED:
		return sync_dir(sp->leasedfd, ".");
	case SPOOL_DONE:
		return sync_dir(sp->donefd, ".");
	case SPOOL_DEAD:
		return sync_dir(sp->deadfd, ".");
	default:
		return 0;
	}
}
