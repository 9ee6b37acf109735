/*
 * Opening a spool: its top directory, never through a symlink; its format
 * file, without which it is not a spool; its state directories, held open
 * for the handle's life; and its config, written by spool-init and edited
 * by people, whose defaults the handle keeps.  Also the host ID that
 * names this writer's audit file, and the system clock's state, which
 * the workers and spool-stat show.
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
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* The state directories, as the handle holds them (spool_open). */
const char *const subdirs[NSUBDIRS] = {
	"tmp", "new", "leased", "done", "dead", "meta", "audit"
};

/* A config value yes or no: 1 or 0; -1 for anything else. */
static int
yes_no(const char *v)
{
	return strcmp(v, "yes") == 0 ? 1 : strcmp(v, "no") == 0 ? 0 : -1;
}

/*
 * Where config is malformed, and why: the number of the line at fault,
 * and, if why is not NULL, a phrase of at most len bytes that names the
 * key, what was given and what was expected.
 */
struct cfg_fault {
	int line;
	char *why;
	size_t len;
};

static int __attribute__((format(printf, 2, 3)))
fault(struct cfg_fault *f, const char *fmt, ...)
{
	va_list ap;

	if (f->why != NULL) {
		va_start(ap, fmt);
		(void)vsnprintf(f->why, f->len, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/*
 * config's durations, and where each goes.  A lease or a deadline of
 * nothing would end as it began.
 */
static const struct duration {
	const char *key;
	size_t off;		/* its int64_t in struct spool */
	int above0;
} durations[] = {
	{ "lease", offsetof(struct spool, lease_ms), 1 },
	{ "deadline", offsetof(struct spool, deadline_ms), 1 },
	{ "backoff", offsetof(struct spool, backoff_ms), 0 },
	{ "backoff-max", offsetof(struct spool, backoff_max_ms), 0 },
	{ "skew", offsetof(struct spool, skew_ms), 0 },
	{ "timeout", offsetof(struct spool, timeout_ms), 0 },
};

/*
 * The spool's defaults from config's text; -1 if it is malformed, with f
 * saying where and why: the first bad line, or that of multi-host=yes
 * without skew, or the later of backoff and backoff-max when the longest
 * delay is below the first.
 */
static int
parse_config(struct spool *sp, char *text, struct cfg_fault *f)
{
	char *line, *next, *eq;
	const char *form;
	const struct duration *d;
	int n = 0, multi_line = 0, backoff_line = 0, r;
	int64_t v;

	sp->lease_ms = 30000;
	sp->max_attempts = 5;
	sp->deadline_ms = 7LL * 86400000;
	sp->backoff_ms = 1000;
	sp->backoff_max_ms = 3600000;
	sp->timeout_ms = 3600000;
	sp->skew_ms = -1;
	for (line = text; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		f->line = ++n;
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if ((eq = strchr(line, '=')) == NULL)
			return fault(f, "'%.40s': not KEY=VALUE", line);
		*eq++ = '\0';
		if ((r = limit_line(sp, line, eq, &form)) == -1)
			return fault(f, "%.70s=%.40s: not %s", line, eq, form);
		if (r == -2)
			return fault(f, "%.70s: not a key of letters, digits, "
			    "'.', '_' or '-', starting with a letter or digit, "
			    "at most 64 bytes", line);
		if (r == -3)
			return fault(f, "%.70s: more than 64 keys with a limit "
			    "or a rate", line);
		if (r == 1)
			continue;
		if (strcmp(line, "max-attempts") == 0) {
			if (spool_parse_token(eq, (uint64_t *)&v) == -1 ||
			    v > 1000000)
				return fault(f, "max-attempts=%.40s: not a "
				    "whole number from 1 to 1000000", eq);
			sp->max_attempts = (int)v;
			continue;
		}
		if (strcmp(line, "reserve") == 0 ||
		    strcmp(line, "reserve-inodes") == 0) {
			if (spool_parse_size(eq, line[7] == '\0' ?
			    &sp->reserve_bytes : &sp->reserve_inodes) == -1)
				return fault(f, "%s=%.40s: not a size, such as "
				    "16M, 500k, 1000 or 0", line, eq);
			continue;
		}
		if (strcmp(line, "multi-host") == 0 ||
		    strcmp(line, "syncfs") == 0) {
			if ((r = yes_no(eq)) == -1)
				return fault(f, "%s=%.40s: not yes or no", line,
				    eq);
			if (line[0] == 'm') {
				sp->multi_host = r;
				multi_line = n;
			} else
				sp->syncfs = r;
			continue;
		}
		for (d = durations; d < durations + NELEM(durations) &&
		    strcmp(line, d->key) != 0; d++)
			;
		if (d == durations + NELEM(durations))
			return fault(f, "%.70s: unknown key", line);
		if (spool_parse_duration(eq, &v) == -1 || (v == 0 && d->above0))
			return fault(f, "%s=%.40s: not a duration%s, such as "
			    "%s500ms, 30s, 5m, 2h or 7d", line, eq,
			    d->above0 ? " above 0" : "", d->above0 ? "" : "0, ");
		if (strncmp(line, "backoff", 7) == 0)
			backoff_line = n;
		*(int64_t *)(void *)((char *)sp + d->off) = v;
	}
	/* Several hosts' clocks never agree exactly: say by how much. */
	if (sp->multi_host && sp->skew_ms <= 0) {
		f->line = multi_line;
		return fault(f, "multi-host=yes: needs a skew above 0, such "
		    "as skew=2s");
	}
	if (sp->skew_ms == -1)
		sp->skew_ms = 0;
	f->line = backoff_line;
	if (sp->backoff_max_ms < sp->backoff_ms)
		return fault(f, "backoff-max is below backoff");
	return 0;
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

static void
set_host(struct spool *sp)
{
	(void)spool_host(sp->host);
	(void)snprintf(sp->writer, sizeof(sp->writer), "%s:%ld", sp->host,
	    (long)getpid());
}

/* The spool's own directory, not through a symlink (EMLINK then). */
int
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
int
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
	struct cfg_fault f = { 0 };
	size_t i;
	int e;

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
	if (fstatat(sp->dirfd, "config", &sp->config_st, AT_SYMLINK_NOFOLLOW)
	    == -1)
		memset(&sp->config_st, 0, sizeof(sp->config_st));
	if (read_small(sp->dirfd, "config", cfg, sizeof(cfg)) == -1) {
		if (errno != ENOENT)
			goto fail;
		cfg[0] = '\0';
	}
	if (parse_config(sp, cfg, &f) == -1) {
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
	buckets_free(sp);
	free(sp->path);
	free(sp);
}

/*
 * The limits of config as it is now: a limit changed by hand takes effect
 * at the next claim of a handle opened before.  One fstatat when config
 * has not changed.  While it cannot be read, or is malformed, the handle
 * keeps the limits it has: a slip of the pen must not stop every worker.
 * Every command started meanwhile refuses the spool, naming the line.
 */
void
config_limits(struct spool *sp)
{
	struct spool tmp;
	struct cfg_fault f = { 0 };
	struct stat st;
	char cfg[4096];

	if (fstatat(sp->dirfd, "config", &st, AT_SYMLINK_NOFOLLOW) == -1)
		memset(&st, 0, sizeof(st));
	if (st.st_ino == sp->config_st.st_ino &&
	    st.st_size == sp->config_st.st_size &&
	    st.st_mtim.tv_sec == sp->config_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == sp->config_st.st_mtim.tv_nsec &&
	    st.st_ctim.tv_sec == sp->config_st.st_ctim.tv_sec &&
	    st.st_ctim.tv_nsec == sp->config_st.st_ctim.tv_nsec)
		return;
	if (read_small(sp->dirfd, "config", cfg, sizeof(cfg)) == -1) {
		if (errno != ENOENT)
			return;
		cfg[0] = '\0';
	}
	memset(&tmp, 0, sizeof(tmp));
	if (parse_config(&tmp, cfg, &f) == -1)
		return;
	memcpy(sp->limits, tmp.limits, sizeof(sp->limits));
	sp->nlimits = tmp.nlimits;
	sp->config_st = st;
}

/* The limits of config as it is now, as config_limits has them. */
size_t
spool_limits(struct spool *sp, struct spool_limit *out, size_t max)
{
	size_t i;

	config_limits(sp);
	for (i = 0; i < (size_t)sp->nlimits && i < max; i++)
		out[i] = sp->limits[i];
	return (size_t)sp->nlimits;
}

/*
 * Which line of dir's config is malformed, and why: its number, 0 if the
 * file is not (or is longer than any config), -1 with errno if it cannot
 * be read.
 */
int
spool_config_error(const char *dir, char *why, size_t len)
{
	struct cfg_fault f = { .why = why, .len = len };
	struct spool tmp;
	char cfg[4096];
	int fd, r, e;

	if (why != NULL && len > 0)
		why[0] = '\0';
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
	return parse_config(&tmp, cfg, &f) == -1 ? f.line : 0;
}

int
spool_config_line(const char *dir)
{
	return spool_config_error(dir, NULL, 0);
}

void
spool_settings(struct spool *sp, struct spool_settings *s)
{
	s->lease_ms = sp->lease_ms;
	s->deadline_ms = sp->deadline_ms;
	s->backoff_ms = sp->backoff_ms;
	s->backoff_max_ms = sp->backoff_max_ms;
	s->max_attempts = sp->max_attempts;
	s->multi_host = sp->multi_host;
	s->skew_ms = sp->skew_ms;
	s->host = sp->host;
	s->timeout_ms = sp->timeout_ms;
}
