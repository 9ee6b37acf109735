/*
 * The room the spool keeps for itself, so that a file system another
 * program fills to its last block and inode does not stop the drain
 * (spool-layout.md, "The reserve").
 *
 * The invariant: reserve/space holds the config's reserve, up to 1 MiB, in
 * allocated blocks, and reserve/0 ... reserve/15 hold an inode each,
 * unless a call that found the file system full has taken some of them
 * back.  1 MiB is the appends of some 3,000 transitions.  Only
 * enqueue makes the reserve whole again, before it takes a job, so a
 * job is never accepted at the drain's expense.
 *
 * A call may draw on the reserve while it is inside an operation that
 * drains (room_enter): claim, finish, renew, redrive, drop, cancel, pause,
 * resume, purge and spool-fsck's repairs.  io.c asks room_give when a
 * call of it fails with ENOSPC or EDQUOT, and tries again if it gave.
 * Nothing here is synced: the reserve holds no job's state, and a power
 * cut can only leave it short, which the next enqueue mends.
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define ROOM_INODES	16	/* files held for their inodes */
#define ROOM_BYTES_MAX	(1 << 20)	/* bytes held: at most the reserve */
#define ROOM_STEPS	16	/* a give returns this part of the bytes */
#define ROOM_LAST	"reserve/15"	/* the first inode file a give takes */

/* The bytes the reserve holds when whole. */
static off_t
room_bytes(const struct spool *sp)
{
	return sp->reserve_bytes < ROOM_BYTES_MAX ? (off_t)sp->reserve_bytes :
	    ROOM_BYTES_MAX;
}

/* The handle whose reserve this thread may draw on; NULL: none. */
static __thread struct spool *drawing;

struct spool *
room_enter(struct spool *sp)
{
	struct spool *prev = drawing;

	drawing = sp;
	return prev;
}

void
room_leave(struct spool **prev)
{
	drawing = *prev;
}

static int
open_room(struct spool *sp, int flags)
{
	int fd;

	do
		fd = openat(sp->dirfd, "reserve", O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC | O_NOFOLLOW | flags);
	while (fd == -1 && errno == EINTR);
	return fd;
}

/*
 * The file system is full: give back an inode and a step of the bytes.
 * 0 if something was given, so that the failed call may try again; -1 if
 * this call may not draw, or nothing is left.  errno is kept.
 */
int
room_give(void)
{
	struct spool *sp = drawing;
	struct stat st;
	char name[12];
	off_t step;
	int rfd, fd, i, gave = 0, e = errno;

	if (sp == NULL || (rfd = open_room(sp, 0)) == -1) {
		errno = e;
		return -1;
	}
	for (i = ROOM_INODES - 1; i >= 0 && !gave; i--) {
		(void)snprintf(name, sizeof(name), "%d", i);
		gave = unlinkat(rfd, name, 0) == 0;
	}
	if ((fd = openat(rfd, "space", O_WRONLY | O_CLOEXEC |
	    O_NOFOLLOW)) != -1) {
		step = room_bytes(sp) / ROOM_STEPS;
		if (step < 65536)
			step = 65536;
		if (fstat(fd, &st) == 0 && st.st_size > 0 &&
		    ftruncate(fd, st.st_size > step ? st.st_size - step :
		    0) == 0)
			gave = 1;
		(void)close(fd);	/* nothing written */
	}
	(void)close(rfd);
	errno = e;
	return gave ? 0 : -1;
}

/*
 * What the reserve holds now, beside the most it holds: 1, or 0 if there
 * is no reserve/ yet, or -1.
 */
int
room_held(struct spool *sp, struct spool_room *r)
{
	struct stat st;
	char name[12];
	int rfd, i;

	r->held_bytes = r->held_inodes = 0;
	r->held_bytes_max = (uint64_t)room_bytes(sp);
	r->held_inodes_max = sp->reserve_inodes > 0 ? ROOM_INODES : 0;
	if ((rfd = open_room(sp, 0)) == -1)
		return errno == ENOENT ? 0 : -1;
	if (fstatat(rfd, "space", &st, AT_SYMLINK_NOFOLLOW) == 0)
		r->held_bytes = (uint64_t)st.st_blocks * 512 <
		    (uint64_t)st.st_size ? (uint64_t)st.st_blocks * 512 :
		    (uint64_t)st.st_size;
	for (i = 0; i < ROOM_INODES; i++) {
		(void)snprintf(name, sizeof(name), "%d", i);
		r->held_inodes += fstatat(rfd, name, &st,
		    AT_SYMLINK_NOFOLLOW) == 0;
	}
	(void)close(rfd);
	return 1;
}

/* Allocate [from, to) of fd, by fallocate or else by writing zeros. */
static int
allocate(int fd, off_t from, off_t to)
{
	static const char zeros[65536];
	ssize_t w;

	if (fallocate(fd, 0, from, to - from) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS)
		return -1;
	while (from < to) {
		w = pwrite(fd, zeros, (size_t)(to - from) < sizeof(zeros) ?
		    (size_t)(to - from) : sizeof(zeros), from);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		from += w;
	}
	return 0;
}

/*
 * Make the reserve what the config says, as far as the file system lets
 * it.  Enqueue does, before it takes a job.  Two fstatats when it is so.
 * The bytes are taken whole or not at all, and only from free space that
 * holds them.  A reserve that cannot be made whole is not an error here:
 * the free space left says whether the job may come in.
 */
void
room_fill(struct spool *sp)
{
	mode_t dmode = sp->group ? 02770 : 0777, fmode = sp->group ? 0660 :
	    0600;
	off_t want = room_bytes(sp);
	struct statvfs vfs;
	struct stat st;
	char name[12];
	int rfd, fd, i, e = errno;

	/* Whole: the bytes, and the inode file a give takes first. */
	if (fstatat(sp->dirfd, "reserve/space", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (st.st_size == want && (sp->reserve_inodes == 0 ||
		    fstatat(sp->dirfd, ROOM_LAST, &st,
		    AT_SYMLINK_NOFOLLOW) == 0))
			goto out;
	} else if (errno != ENOENT || (want == 0 && sp->reserve_inodes == 0))
		goto out;
	if ((rfd = open_room(sp, 0)) == -1) {
		if (errno != ENOENT || mkdirat(sp->dirfd, "reserve",
		    dmode) == -1 || (sp->group && fchmodat(sp->dirfd,
		    "reserve", dmode, 0) == -1) ||
		    (rfd = open_room(sp, 0)) == -1)
			goto out;
	}
	/*
	 * The inodes first, and the bytes only once they are all there: the
	 * size of space is what says the reserve is whole.
	 */
	for (i = 0; sp->reserve_inodes > 0 && i < ROOM_INODES; i++) {
		(void)snprintf(name, sizeof(name), "%d", i);
		if ((fd = openat(rfd, name, O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC | O_NOFOLLOW, fmode)) != -1) {
			if (sp->group)
				(void)fchmod(fd, fmode);
			(void)close(fd);	/* empty */
		} else if (errno != EEXIST)
			goto done;
	}
	if ((fd = openat(rfd, "space", O_WRONLY | O_CREAT | O_CLOEXEC |
	    O_NOFOLLOW, fmode)) == -1)
		goto done;
	if (sp->group)
		(void)fchmod(fd, fmode);
	if (fstat(fd, &st) == 0) {
		if (st.st_size > want)
			(void)ftruncate(fd, want);	/* the config lowered it */
		else if (fstatvfs(fd, &vfs) == 0 && (uint64_t)vfs.f_bavail *
		    vfs.f_frsize >= (uint64_t)(want - st.st_size) &&
		    allocate(fd, 0, want) == -1)
			(void)ftruncate(fd, st.st_size);	/* not a part */
	}
	(void)close(fd);	/* its size is all that counts */
done:
	(void)close(rfd);
out:
	errno = e;
}

/* spool_room without what the reserve holds: enqueue's check, one call. */
int
room_below(struct spool *sp, struct spool_room *r)
{
	struct statvfs vfs;

	memset(r, 0, sizeof(*r));
	if (fstatvfs(sp->dirfd, &vfs) == -1)
		return -1;
	r->free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	r->reserve_bytes = sp->reserve_bytes;
	r->free_inodes = vfs.f_files != 0 ? (uint64_t)vfs.f_favail :
	    UINT64_MAX;
	r->reserve_inodes = sp->reserve_inodes;
	return r->free_bytes < r->reserve_bytes ||
	    r->free_inodes < r->reserve_inodes;
}

int
spool_room(struct spool *sp, struct spool_room *r)
{
	int below;

	if ((below = room_below(sp, r)) == -1 ||
	    (r->holding = room_held(sp, r)) == -1)
		return -1;
	return below;
}
