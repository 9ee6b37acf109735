/*
 * The audit log: one line per transition, appended in one write(2) per call
 * and fdatasync'd before the call reports success.  Each host writes its own
 * file, audit/HOST.log, opened for each call so that it can be rotated by
 * renaming it.  The line format is in spool-layout.md, "Audit log".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static int
abuf_grow(struct abuf *ab, size_t want)
{
	size_t size = ab->size ? ab->size : 1024;
	char *p;

	while (size - ab->len < want)
		size *= 2;
	if (size == ab->size)
		return 0;
	if ((p = realloc(ab->p, size)) == NULL)
		return -1;
	ab->p = p;
	ab->size = size;
	return 0;
}

void
abuf_free(struct abuf *ab)
{
	free(ab->p);
	ab->p = NULL;
	ab->len = ab->size = 0;
}

static const char *
dash(const char *s)
{
	return s != NULL && s[0] != '\0' ? s : "-";
}

int
audit_add(struct abuf *ab, struct spool *sp, const char *id,
    const struct rec *r, const char *event)
{
	char when[40], note[24];
	struct tm tm;
	time_t secs = (time_t)(r->t / 1000);
	int n;

	if (gmtime_r(&secs, &tm) == NULL ||
	    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		errno = EOVERFLOW;
		return -1;
	}
	/* A claim names the token it superseded: the chain of leases. */
	if (r->note[0] == '\0' && r->ev == EV_CLAIM && r->prev != 0)
		(void)snprintf(note, sizeof(note), "%" PRIu64, r->prev);
	else
		(void)snprintf(note, sizeof(note), "%s", "-");
	/* ID, owner and note fit 128 bytes each; 640 more is plenty. */
	if (abuf_grow(ab, 4 * SPOOL_ID_MAX + 640) == -1)
		return -1;
	n = snprintf(ab->p + ab->len, ab->size - ab->len,
	    "%s.%03dZ %s %s %" PRIu64 " %d %d %s %s %s %s %s\n", when,
	    (int)(r->t % 1000), event, id, r->tok, r->att, r->cyc,
	    dash(r->by[0] != '\0' ? r->by : r->owner),
	    r->reason ? spool_reason_name(r->reason) : "-",
	    r->cls ? spool_class_name(r->cls) : "-",
	    r->note[0] != '\0' ? r->note : note, sp->writer);
	if (n < 0 || (size_t)n >= ab->size - ab->len) {
		errno = EOVERFLOW;
		return -1;
	}
	ab->len += (size_t)n;
	return 0;
}

int
audit_flush(struct spool *sp, struct abuf *ab)
{
	char name[HOST_MAX + 8];
	int fd, e, created = 0;

	if (ab->len == 0)
		return 0;
	(void)snprintf(name, sizeof(name), "%s.log", sp->host);
	fd = openat(sp->auditfd, name,
	    O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd == -1 && errno == ENOENT) {
		fd = openat(sp->auditfd, name, O_WRONLY | O_APPEND | O_CREAT |
		    O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
		created = fd != -1;
		if (fd == -1 && errno == EEXIST)
			fd = openat(sp->auditfd, name, O_WRONLY | O_APPEND |
			    O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	}
	if (fd == -1)
		return -1;
	if ((created && file_mode(sp, fd, 0660) == -1) ||
	    write_all(fd, ab->p, ab->len) == -1)
		goto fail;
	crash_point("audit-written");
	if (sync_fd(fd) == -1)
		goto fail;
	if (close_fd(fd) == -1)
		return -1;
	if (created && sync_dir(sp->auditfd, ".") == -1)
		return -1;
	ab->len = 0;
	return 0;
fail:
	e = errno;
	(void)close_fd(fd);
	errno = e;
	return -1;
}

static int
compressed(const char *name)
{
	static const char *const suffixes[] = {
		".gz", ".xz", ".bz2", ".zst", ".lz4", ".Z"
	};
	size_t len = strlen(name), i, n;

	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		n = strlen(suffixes[i]);
		if (len > n && strcmp(name + len - n, suffixes[i]) == 0)
			return 1;
	}
	return 0;
}

int
spool_audit_scan(struct spool *sp,
    int (*fn)(void *arg, const char *line, size_t len), void *arg)
{
	char buf[65536];
	struct dirent *de;
	size_t have;
	ssize_t n;
	char *p, *nl;
	DIR *d;
	int fd, rv = 0, skip;

	if ((d = dir_list(sp->auditfd)) == NULL)
		return -1;
	/*
	 * Every file: HOST.log and whatever rotation named it, except those
	 * it compressed, which are not lines.
	 */
	while (rv == 0 && (errno = 0, de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || compressed(de->d_name))
			continue;
		fd = openat(sp->auditfd, de->d_name, O_RDONLY | O_CLOEXEC |
		    O_NOFOLLOW | O_NONBLOCK);
		if (fd == -1 && (errno == ENOENT || errno == ELOOP))
			continue;	/* rotated away meanwhile; a symlink */
		if (fd == -1) {
			rv = -1;	/* unread, its lines would seem missing */
			break;
		}
		have = 0;
		skip = 0;
		while (rv == 0 && (n = read_full(fd, buf + have,
		    sizeof(buf) - have)) > 0) {
			have += (size_t)n;
			for (p = buf; rv == 0 && (nl = memchr(p, '\n',
			    have - (size_t)(p - buf))) != NULL; p = nl + 1)
				if (!skip)
					rv = fn(arg, p, (size_t)(nl - p));
				else
					skip = 0;	/* its tail */
			/* A line longer than the buffer is not ours: skip. */
			have -= (size_t)(p - buf);
			memmove(buf, p, have);
			if (have == sizeof(buf)) {
				have = 0;
				skip = 1;
			}
		}
		(void)close_fd(fd);	/* read-only; a torn last line is ignored */
		if (n == -1 && rv == 0)
			rv = -1;
	}
	if (rv == 0 && errno != 0)
		rv = -1;
	(void)closedir(d);	/* read-only */
	return rv;
}
