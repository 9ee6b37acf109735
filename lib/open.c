/*
 * Opening and creating a spool.  A spool is recognised by its format file,
 * which the init writes last: a directory without it is not a spool, even
 * if an interrupted init left the state directories behind.  Defaults come
 * from the config file, written by spool-init and edited by people.
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static const char *const subdirs[] = {
	"tmp", "new", "leased", "done", "dead", "meta", "audit"
};
#define NSUBDIRS	(sizeof(subdirs) / sizeof(subdirs[0]))

/* The only names a spool's top directory holds. */
static const char *const topnames[] = {
	"format", "config", "next-expiry", "paused", "tokens", "tmp", "new",
	"leased", "done", "dead", "meta", "audit", "quarantine", "hosts"
};

static const char default_config[] =
    "# Defaults of this spool; see spool(7).  Durations take ms s m h d.\n"
    "lease=30s\n"
    "max-attempts=5\n"
    "deadline=7d\n"
    "backoff=1s\n"
    "backoff-max=1h\n"
    "# Free space and inodes kept for draining: enqueue stops below them.\n"
    "reserve=16M\n"
    "reserve-inodes=1000\n";

/* A config value yes or no: 1 or 0; -1 for anything else. */
static int
yes_no(const char *v)
{
	return strcmp(v, "yes") == 0 ? 1 : strcmp(v, "no") == 0 ? 0 : -1;
}

/*
 * The spool's defaults from config's text; -1 if it is malformed, with
 * *bad the number of the line at fault: the first bad one, or that of
 * multi-host=yes without skew, or the later of backoff and backoff-max
 * when the longest delay is below the first.
 */
static int
parse_config(struct spool *sp, char *text, int *bad)
{
	char *line, *next, *eq;
	int n = 0, multi_line = 0, backoff_line = 0;
	int64_t v;

	sp->lease_ms = 30000;
	sp->max_attempts = 5;
	sp->deadline_ms = 7LL * 86400000;
	sp->backoff_ms = 1000;
	sp->backoff_max_ms = 3600000;
	sp->skew_ms = -1;
	for (line = text; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		*bad = ++n;
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if ((eq = strchr(line, '=')) == NULL)
			return -1;
		*eq++ = '\0';
		if (strcmp(line, "max-attempts") == 0) {
			if (spool_parse_token(eq, (uint64_t *)&v) == -1 ||
			    v > 1000000)
				return -1;
			sp->max_attempts = (int)v;
			continue;
		}
		if (strcmp(line, "reserve") == 0) {
			if (spool_parse_size(eq, &sp->reserve_bytes) == -1)
				return -1;
			continue;
		}
		if (strcmp(line, "reserve-inodes") == 0) {
			if (spool_parse_size(eq, &sp->reserve_inodes) == -1)
				return -1;
			continue;
		}
		if (strcmp(line, "multi-host") == 0) {
			if ((sp->multi_host = yes_no(eq)) == -1)
				return -1;
			multi_line = n;
			continue;
		}
		if (strcmp(line, "syncfs") == 0) {
			if ((sp->syncfs = yes_no(eq)) == -1)
				return -1;
			continue;
		}
		if (spool_parse_duration(eq, &v) == -1)
			return -1;
		if (strncmp(line, "backoff", 7) == 0)
			backoff_line = n;
		if (strcmp(line, "lease") == 0 && v > 0)
			sp->lease_ms = v;
		else if (strcmp(line, "deadline") == 0 && v > 0)
			sp->deadline_ms = v;
		else if (strcmp(line, "backoff") == 0)
			sp->backoff_ms = v;
		else if (strcmp(line, "backoff-max") == 0)
			sp->backoff_max_ms = v;
		else if (strcmp(line, "skew") == 0)
			sp->skew_ms = v;
		else
			return -1;
	}
	/* Several hosts' clocks never agree exactly: say by how much. */
	if (sp->multi_host && sp->skew_ms <= 0) {
		*bad = multi_line;
		return -1;
	}
	if (sp->skew_ms == -1)
		sp->skew_ms = 0;
	*bad = backoff_line;
	return sp->backoff_max_ms >= sp->backoff_ms ? 0 : -1;
}

/*
 * May a wait be one syncfs(2) of the spool's file system (config
 * syncfs=yes)?  Only on a local disk file system whose syncfs reports what
 * failed (Linux 5.17 and later return the journal's or the log's errors,
 * not only writeback's), every directory of the spool on it, and one host:
 * a FUSE or network client's syncfs need not reach the server's disk.
 * 0 if it may; -1 with EXDEV if not.
 */
static int
syncfs_fits(struct spool *sp, int *const *fds)
{
	static const unsigned long local[] = {
		0xEF53,		/* ext2, ext3, ext4 */
		0x58465342,	/* xfs */
		0x9123683E,	/* btrfs */
		0xF2F52010	/* f2fs */
	};
	struct statfs sf;
	struct utsname u;
	struct stat top, st;
	size_t i;
	int maj, min;

	if (sp->multi_host || uname(&u) == -1 ||
	    sscanf(u.release, "%d.%d", &maj, &min) != 2 ||
	    maj < 5 || (maj == 5 && min < 17))
		goto no;
	if (fstatfs(sp->dirfd, &sf) == -1 || fstat(sp->dirfd, &top) == -1)
		return -1;
	for (i = 0; i < NELEM(local) &&
	    (unsigned long)sf.f_type != local[i]; i++)
		continue;
	if (i == NELEM(local))
		goto no;
	for (i = 0; i < NSUBDIRS; i++) {
		if (fstat(*fds[i], &st) == -1)
			return -1;
		if (st.st_dev != top.st_dev)
			goto no;
	}
	return 0;
no:
	errno = EXDEV;
	return -1;
}

/*
 * The host ID, which names this writer's audit file: $SPOOL_HOST, else the
 * first line of /etc/spool-host, else the host name; in the ID alphabet,
 * at most SPOOL_HOST_MAX bytes.
 */
const char *
spool_host(char *buf)
{
	const char *s = getenv("SPOOL_HOST");
	char name[256];
	size_t i;
	FILE *f;

	if (s == NULL || !spool_valid_id(s)) {
		name[0] = '\0';
		if ((f = fopen("/etc/spool-host", "re")) != NULL) {
			if (fgets(name, sizeof(name), f) == NULL)
				name[0] = '\0';
			name[strcspn(name, "\n")] = '\0';
			(void)fclose(f);	/* read-only */
		}
		if (name[0] == '\0' && gethostname(name, sizeof(name)) == -1)
			strcpy(name, "localhost");
		name[sizeof(name) - 1] = '\0';
		s = name;
	}
	for (i = 0; s[i] != '\0' && i < SPOOL_HOST_MAX; i++)
		buf[i] = (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' &&
		    s[i] <= '9') || s[i] == '.' || s[i] == '_' ||
		    (s[i] == '-' && i > 0) ? s[i] : '_';
	buf[i] = '\0';
	if (i == 0)
		strcpy(buf, "localhost");
	return buf;
}

static void
set_host(struct spool *sp)
{
	(void)spool_host(sp->host);
	(void)snprintf(sp->writer, sizeof(sp->writer), "%s:%ld", sp->host,
	    (long)getpid());
}

/* The spool's own directory, not through a symlink (EMLINK then). */
static int
open_top(const char *dir)
{
	struct stat st;
	int fd, e;

	fd = sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
	    O_NOFOLLOW, 0);
	if (fd == -1 && (errno == ELOOP || errno == ENOTDIR)) {
		e = errno;
		if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
			e = EMLINK;
		errno = e;
	}
	return fd;
}

/*
 * The spool's format, 1 or 2 (spool-layout.md, "Formats"); -1 with
 * ENODATA if dirfd is not a spool, EPROTO if it is of another format.
 */
static int
read_format(int dirfd)
{
	char buf[64];

	if (read_small(dirfd, "format", buf, sizeof(buf)) == -1) {
		if (errno == ENOENT)
			errno = ENODATA;	/* not a spool */
		return -1;
	}
	if (strcmp(buf, "1\n") == 0 || strcmp(buf, "2\n") == 0)
		return buf[0] - '0';
	errno = EPROTO;
	return -1;
}

struct spool *
spool_open(const char *dir)
{
	struct spool *sp;
	struct stat st;
	char cfg[4096];
	int *fds[NSUBDIRS];
	size_t i;
	int e, bad;

	if ((sp = calloc(1, sizeof(*sp))) == NULL)
		return NULL;
	fds[0] = &sp->tmpfd;
	fds[1] = &sp->newfd;
	fds[2] = &sp->leasedfd;
	fds[3] = &sp->donefd;
	fds[4] = &sp->deadfd;
	fds[5] = &sp->metafd;
	fds[6] = &sp->auditfd;
	for (i = 0; i < NSUBDIRS; i++)
		*fds[i] = -1;
	sp->tokfd = -1;
	sp->lock_wait_ms = -1;
	sp->tokens_gave_up = -1;
	/*
	 * The spool itself is never reached through a symlink in its last
	 * component: whoever can swap it could point every write elsewhere.
	 */
	sp->dirfd = open_top(dir);
	if (sp->dirfd == -1 || (sp->format = read_format(sp->dirfd)) == -1)
		goto fail;
	for (i = 0; i < NSUBDIRS; i++) {
		*fds[i] = sys_openat(sp->dirfd, subdirs[i],
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
		if (*fds[i] == -1) {
			if (errno == ENOENT || errno == ENOTDIR ||
			    errno == ELOOP)
				errno = EUCLEAN;
			goto fail;
		}
	}
	if (fstat(sp->dirfd, &st) == -1)
		goto fail;
	sp->group = (st.st_mode & S_ISGID) != 0;
	if (read_small(sp->dirfd, "config", cfg, sizeof(cfg)) == -1) {
		if (errno != ENOENT)
			goto fail;
		cfg[0] = '\0';
	}
	if (parse_config(sp, cfg, &bad) == -1) {
		errno = EBADMSG;
		goto fail;
	}
	if (sp->syncfs && syncfs_fits(sp, fds) == -1)
		goto fail;
	if ((sp->path = realpath(dir, NULL)) == NULL)
		goto fail;
	set_host(sp);
	if (sp->multi_host && host_register(sp) == -1)
		goto fail;
	return sp;
fail:
	e = errno;
	spool_close(sp);
	errno = e;
	return NULL;
}

void
spool_close(struct spool *sp)
{
	int fds[9];
	size_t i;

	if (sp == NULL)
		return;
	fds[8] = sp->tokfd;
	fds[0] = sp->dirfd;
	fds[1] = sp->tmpfd;
	fds[2] = sp->newfd;
	fds[3] = sp->leasedfd;
	fds[4] = sp->donefd;
	fds[5] = sp->deadfd;
	fds[6] = sp->metafd;
	fds[7] = sp->auditfd;
	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] != -1)
			(void)close_fd(fds[i]);	/* read, or synced */
	ring_free(sp);
	look_free(sp->look);
	free(sp->path);
	free(sp);
}

/*
 * Which line of dir's config is malformed: its number, 0 if the file is
 * not (or is longer than any config), -1 with errno if it cannot be read.
 */
int
spool_config_line(const char *dir)
{
	struct spool tmp;
	char cfg[4096];
	int fd, bad = 0, r, e;

	if ((fd = open_top(dir)) == -1)
		return -1;
	r = read_small(fd, "config", cfg, sizeof(cfg));
	e = errno;
	(void)close_fd(fd);	/* read-only */
	if (r == -1) {
		if (e == EBADMSG)
			return 0;
		errno = e;
		return -1;
	}
	memset(&tmp, 0, sizeof(tmp));
	return parse_config(&tmp, cfg, &bad) == -1 ? bad : 0;
}

/*
 * Write a small file durably: tmp/, fsync, rename into the top directory,
 * fsync that.  replace: a file of that name may be replaced (the pause).
 */
int
write_top_file(struct spool *sp, const char *name, const char *text,
    int replace)
{
	int tmpfd = sp->tmpfd;
	char tmp[64];
	int fd, e;

	(void)snprintf(tmp, sizeof(tmp), "%s,%ld", name, (long)getpid());
	(void)sys_unlinkat(tmpfd, tmp,
	    0);	/* a leftover of a crashed init */
	fd = sys_openat(tmpfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0666);
	if (fd == -1)
		return -1;
	if (file_mode(sp, fd, 0664) == -1 ||
	    write_all(fd, text, strlen(text)) == -1 || sync_fd(fd) == -1) {
		e = errno;
		(void)close_fd(fd);
		(void)sys_unlinkat(tmpfd, tmp, 0);
		errno = e;
		return -1;
	}
	if (close_fd(fd) == -1 || (replace ?
	    sys_renameat(tmpfd, tmp, sp->dirfd, name, 0) :
	    move_noreplace(tmpfd, tmp, sp->dirfd, name)) == -1) {
		e = errno;
		(void)sys_unlinkat(tmpfd, tmp, 0);
		errno = e;
		return -1;
	}
	return sync_dir(sp->dirfd, ".");
}

static int
check_empty_or_ours(int dirfd)
{
	struct dirent *de;
	DIR *d;
	size_t i;
	int ours = 1, e;

	if ((d = dir_list(dirfd)) == NULL)
		return -1;
	while (ours && (errno = 0, de = dir_next(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		for (ours = 0, i = 0; i < sizeof(topnames) / sizeof(topnames[0]);
		    i++)
			if (strcmp(de->d_name, topnames[i]) == 0)
				ours = 1;
	}
	e = errno;	/* 0 unless the listing failed */
	(void)closedir(d);	/* read-only */
	if (e != 0) {
		errno = e;
		return -1;
	}
	if (!ours) {
		errno = EEXIST;
		return -1;
	}
	return 0;
}

/* Make the new spool's own name durable. */
static int
sync_parent(const char *dir)
{
	char *copy, *slash;
	int fd, r, e;

	if ((copy = strdup(dir)) == NULL)
		return -1;
	for (slash = copy + strlen(copy); slash > copy + 1 && slash[-1] == '/';)
		*--slash = '\0';
	if ((slash = strrchr(copy, '/')) == NULL)
		strcpy(copy, ".");
	else if (slash == copy)
		slash[1] = '\0';
	else
		*slash = '\0';
	/* The parent is the user's: it may be reached through symlinks. */
	fd = sys_openat(AT_FDCWD, copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	free(copy);
	if (fd == -1)
		return -1;
	r = sync_fd(fd);
	e = errno;
	(void)close_fd(fd);
	errno = e;
	return r;
}

int
spool_init(const char *dir, const char *groupname)
{
	struct spool sp;
	struct group *gr = NULL;
	char buf[64];
	size_t i;
	int made, fd, tmpfd = -1, format = 2, fresh = 0, e;

	memset(&sp, 0, sizeof(sp));
	sp.group = groupname != NULL;
	if (groupname != NULL && (gr = getgrnam(groupname)) == NULL) {
		errno = ESRCH;
		return -1;
	}
	made = sys_mkdirat(AT_FDCWD, dir, sp.group ? 02770 : 0777) == 0;
	if (!made && errno != EEXIST)
		return -1;
	if ((sp.dirfd = open_top(dir)) == -1)
		return -1;
	/* A spool already, of either format, is completed as it is. */
	if ((format = read_format(sp.dirfd)) == -1) {
		if (errno != ENODATA || check_empty_or_ours(sp.dirfd) == -1)
			goto fail;
		format = 2;
		fresh = 1;
	}
	if (gr != NULL && (fchown(sp.dirfd, (uid_t)-1, gr->gr_gid) == -1 ||
	    fchmod(sp.dirfd, 02770) == -1))
		goto fail;
	for (i = 0; i < NSUBDIRS; i++) {
		if (mkdir_mode(&sp, sp.dirfd, subdirs[i]) == -1) {
			if (errno != EEXIST)
				goto fail;
			if (gr != NULL && (fchownat(sp.dirfd, subdirs[i],
			    (uid_t)-1, gr->gr_gid, AT_SYMLINK_NOFOLLOW) == -1 ||
			    fchmodat(sp.dirfd, subdirs[i], 02770, 0) == -1))
				goto fail;
		}
		if ((fd = sys_openat(sp.dirfd, subdirs[i], O_RDONLY |
		    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)) == -1)
			goto fail;
		if (i == 0)
			tmpfd = fd;
		else
			(void)close_fd(fd);	/* read-only directory */
	}
	sp.tmpfd = tmpfd;
	if (faccessat(sp.dirfd, "config", F_OK, AT_SYMLINK_NOFOLLOW) == -1 &&
	    write_top_file(&sp, "config", default_config, 0) == -1)
		goto fail;
	/*
	 * A new spool's counter: no token has been handed out.  Never on a
	 * spool that exists: its counter, if lost, is spool-fsck's to make
	 * again, above every token it may have handed out.
	 */
	if (fresh && faccessat(sp.dirfd, "tokens", F_OK,
	    AT_SYMLINK_NOFOLLOW) == -1 && (tokens_text(buf, sizeof(buf),
	    1) == -1 || write_top_file(&sp, "tokens", buf, 0) == -1))
		goto fail;
	/* The format file last: until it is there, this is not a spool. */
	if (sync_dir(sp.dirfd, ".") == -1)
		goto fail;
	if (faccessat(sp.dirfd, "format", F_OK, AT_SYMLINK_NOFOLLOW) == -1 &&
	    write_top_file(&sp, "format", "2\n", 0) == -1)
		goto fail;
	if (made && sync_parent(dir) == -1)
		goto fail;
	(void)close_fd(tmpfd);
	(void)close_fd(sp.dirfd);
	return 0;
fail:
	e = errno;
	if (tmpfd != -1)
		(void)close_fd(tmpfd);
	(void)close_fd(sp.dirfd);
	errno = e;
	return -1;
}
