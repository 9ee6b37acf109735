/*
 * The audit log: one line per transition, appended in one write(2) per call
 * and fdatasync'd before the call reports success.  Each host writes its own
 * file, audit/HOST.log, opened for each call so that it can be rotated by
 * renaming it.  The line format is in spool-layout.md, "The audit log".
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define AUDIT_FIELDS	11	/* spool-layout.md, "The audit log" */

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

/*
 * UTC with milliseconds, as ISO 8601 writes it; years past 9999 whole,
 * which spool_parse_time reads back.  The date is computed here, from
 * the days since the epoch (the proleptic Gregorian calendar, as gmtime
 * has it): gmtime would read the time zone file first, in every command.
 */
size_t
spool_format_time(char *buf, size_t size, int64_t ms)
{
	int64_t secs, days, era, doe, yoe, doy, mp, y, m, d, sod;
	int n;

	if (ms < 0)
		return 0;
	secs = ms / 1000;
	days = secs / 86400;
	sod = secs % 86400;
	/* March-based years of 400: each era has 146,097 days. */
	days += 719468;
	era = days / 146097;
	doe = days - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	d = doy - (153 * mp + 2) / 5 + 1;
	m = mp < 10 ? mp + 3 : mp - 9;
	y = yoe + era * 400 + (m <= 2);
	n = snprintf(buf, size, "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ",
	    (long long)y, (int)m, (int)d, (int)(sod / 3600),
	    (int)(sod / 60 % 60), (int)(sod % 60), (int)(ms % 1000));
	return n < 0 || (size_t)n >= size ? 0 : (size_t)n;
}

/* n decimal digits at s, all of them, as a number. */
static int
digits(const char *s, size_t n, int64_t *v)
{
	int64_t x = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		x = x * 10 + (s[i] - '0');
	}
	*v = x;
	return 0;
}

int
spool_parse_time(const char *s, size_t len, int64_t *ms)
{
	/* After the year: -MM-DDTHH:MM:SS.mmmZ, and each field's limits. */
	static const struct {
		char before;
		int min, max;
	} f[] = {
		{ '-', 1, 12 }, { '-', 1, 31 }, { 'T', 0, 23 }, { ':', 0, 59 },
		{ ':', 0, 59 }
	};
	int64_t v[NELEM(f)], year, frac;
	struct tm tm;
	time_t secs;
	size_t y;
	int i;

	for (y = 0; y < len && y < 10 && s[y] >= '0' && s[y] <= '9'; y++)
		continue;
	if (y < 4 || y > 9 || s[0] == '0' || len != y + 20 ||
	    digits(s, y, &year) == -1)
		return -1;
	for (i = 0; i < NELEM(f); i++) {
		if (s[y + 3 * i] != f[i].before ||
		    digits(s + y + 3 * i + 1, 2, &v[i]) == -1 ||
		    v[i] < f[i].min || v[i] > f[i].max)
			return -1;
	}
	if (s[y + 15] != '.' || digits(s + y + 16, 3, &frac) == -1 ||
	    s[y + 19] != 'Z')
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = (int)(year - 1900);
	tm.tm_mon = (int)v[0] - 1;
	tm.tm_mday = (int)v[1];
	tm.tm_hour = (int)v[2];
	tm.tm_min = (int)v[3];
	tm.tm_sec = (int)v[4];
	if ((secs = timegm(&tm)) < 0 || tm.tm_mday != (int)v[1])
		return -1;	/* before 1970, or a day the month lacks */
	*ms = (int64_t)secs * 1000 + frac;
	return 0;
}

/* Field i of an audit line: "-", or a word that valid() accepts. */
static int
word(const char *s, size_t len, char *dst, size_t size,
    int (*valid)(const char *))
{
	if (len == 1 && s[0] == '-') {
		dst[0] = '\0';
		return 0;
	}
	if (len >= size)
		return -1;
	memcpy(dst, s, len);
	dst[len] = '\0';
	return valid(dst) ? 0 : -1;
}

/*
 * ACTOR or NOTE: "-", or text that spool_valid_note accepts, percent-
 * encoded as the writer encodes it (pct_decode refuses any other form).
 */
static int
text(const char *s, size_t len, char *dst, size_t size)
{
	if (len == 1 && s[0] == '-') {
		dst[0] = '\0';
		return 0;
	}
	return pct_decode(s, len, dst, size) == 0 && spool_valid_note(dst) ?
	    0 : -1;
}

/* A name of a closed set, or "-" (0). */
static int
name(const char *s, size_t len, int (*from_name)(const char *), int *v)
{
	char buf[32];

	if (len == 1 && s[0] == '-') {
		*v = 0;
		return 0;
	}
	if (len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return (*v = from_name(buf)) > 0 ? 0 : -1;
}

/*
 * A decimal number as the writer writes it: up to 18 digits (below 2^63),
 * no leading zero, at most max.
 */
static int
number(const char *s, size_t len, int64_t max, int64_t *v)
{
	return len == 0 || len > 18 || (s[0] == '0' && len > 1) ||
	    digits(s, len, v) == -1 || *v > max ? -1 : 0;
}

int
spool_audit_parse(const char *line, size_t len, struct spool_audit *a)
{
	const char *f[AUDIT_FIELDS], *p = line, *end = line + len, *sp;
	size_t n[AUDIT_FIELDS], i;
	int64_t tok, att, cyc;
	int ev;

	memset(a, 0, sizeof(*a));
	if (memchr(line, '\0', len) != NULL)
		goto bad;	/* the fields are C strings */
	for (i = 0; i < AUDIT_FIELDS; i++) {
		if ((sp = memchr(p, ' ', (size_t)(end - p))) == NULL)
			sp = end;
		f[i] = p;
		n[i] = (size_t)(sp - p);
		if (n[i] == 0 || (sp == end) != (i == AUDIT_FIELDS - 1))
			goto bad;
		p = sp + 1;
	}
	if (spool_parse_time(f[0], n[0], &a->time) == -1 ||
	    name(f[1], n[1], spool_event_from_name, &ev) == -1 ||
	    ev == SPOOL_EV_NONE ||
	    word(f[2], n[2], a->id, sizeof(a->id), spool_valid_id) == -1 ||
	    number(f[3], n[3], INT64_MAX, &tok) == -1 ||
	    number(f[4], n[4], INT_MAX, &att) == -1 ||
	    number(f[5], n[5], INT_MAX, &cyc) == -1 ||
	    text(f[6], n[6], a->actor, sizeof(a->actor)) == -1 ||
	    name(f[7], n[7], spool_reason_from_name, &a->reason) == -1 ||
	    name(f[8], n[8], spool_class_from_name, &a->class) == -1 ||
	    text(f[9], n[9], a->note, sizeof(a->note)) == -1 ||
	    word(f[10], n[10], a->writer, sizeof(a->writer),
	    spool_valid_owner) == -1)
		goto bad;
	a->event = (enum spool_event)ev;
	a->token = (uint64_t)tok;
	a->attempt = (int)att;
	a->cycle = (int)cyc;
	return 0;
bad:
	memset(a, 0, sizeof(*a));
	errno = EINVAL;
	return -1;
}

static const char *
dash(const char *s)
{
	return s[0] != '\0' ? s : "-";
}

/*
 * The one writer of the line that spool_audit_parse reads, with its
 * newline; 0 if it does not fit (AUDIT_LINE_MAX bytes always do).  ACTOR
 * and NOTE are percent-encoded: a name or a ticket word is unchanged, and
 * text with spaces is still one field.  A line the parser accepts is
 * written back byte for byte.
 */
size_t
audit_format(char *buf, size_t size, const struct spool_audit *a)
{
	char when[40], actor[PCT_SIZE(SPOOL_ID_MAX)];
	char note[PCT_SIZE(SPOOL_ID_MAX)];
	int n;

	if (spool_format_time(when, sizeof(when), a->time) == 0 ||
	    pct_encode(actor, sizeof(actor), a->actor) == -1 ||
	    pct_encode(note, sizeof(note), a->note) == -1)
		return 0;
	n = snprintf(buf, size, "%s %s %s %" PRIu64 " %d %d %s %s %s %s %s\n",
	    when, spool_event_name(a->event), dash(a->id), a->token,
	    a->attempt, a->cycle, dash(actor),
	    a->reason ? spool_reason_name(a->reason) : "-",
	    a->class ? spool_class_name(a->class) : "-", dash(note),
	    dash(a->writer));
	return n < 0 || (size_t)n >= size ? 0 : (size_t)n;
}

/* Line a, written by this process, onto the buffer. */
static int
append_line(struct abuf *ab, struct spool *sp, struct spool_audit *a)
{
	size_t n;

	(void)snprintf(a->writer, sizeof(a->writer), "%s", sp->writer);
	/* Each field fits its buffer in struct spool_audit. */
	if (abuf_grow(ab, AUDIT_LINE_MAX) == -1)
		return -1;
	if ((n = audit_format(ab->p + ab->len, ab->size - ab->len, a)) == 0) {
		errno = EOVERFLOW;
		return -1;
	}
	ab->len += n;
	return 0;
}

/*
 * The line of a transition whose record is r.  The actor is the operator
 * if one is named, else the lease holder; a claim with no note names the
 * token it superseded, so that a job's leases read as a chain.
 */
int
audit_add(struct abuf *ab, struct spool *sp, const char *id,
    const struct rec *r, int event)
{
	struct spool_audit a;

	memset(&a, 0, sizeof(a));
	a.time = r->t;
	a.event = (enum spool_event)event;
	(void)snprintf(a.id, sizeof(a.id), "%s", id);
	a.token = r->tok;
	a.attempt = r->att;
	a.cycle = r->cyc;
	(void)snprintf(a.actor, sizeof(a.actor), "%s",
	    r->by[0] != '\0' ? r->by : r->owner);
	a.reason = r->reason;
	a.class = r->cls;
	if (r->note[0] != '\0')
		(void)snprintf(a.note, sizeof(a.note), "%s", r->note);
	else if (r->ev == SPOOL_EV_CLAIM && r->prev != 0)
		(void)snprintf(a.note, sizeof(a.note), "%" PRIu64, r->prev);
	return append_line(ab, sp, &a);
}

/*
 * The line that says the transition of line a did not happen (a power cut
 * kept the line, and lost the record or the move): its time, ID, token,
 * attempt, cycle and actor, its event as the note.
 */
int
audit_void(struct abuf *ab, struct spool *sp, const struct spool_audit *a)
{
	struct spool_audit v = *a;

	v.event = SPOOL_EV_VOID;
	v.reason = v.class = 0;
	(void)snprintf(v.note, sizeof(v.note), "%s",
	    spool_event_name(a->event));
	return append_line(ab, sp, &v);
}

/*
 * A power cut may leave the log's last line torn, without its newline: the
 * next append then begins with a space and a newline.  The newline, or its
 * first line would be read as the rest of the torn one and skipped; the
 * space, or a line torn inside its last field (the writer, "host:pid",
 * any prefix of which is one) would be read as whole, a line of a
 * transition that may never have been made, or a second line of one
 * made.  A line that ends in a space is one the parser refuses.  A log
 * this process cannot read is taken as whole.
 */
static int
mend_tail(int fd, struct abuf *ab)
{
	struct stat st;
	char c;

	if (fstat(fd, &st) == -1)
		return -1;
	if (st.st_size == 0 || sys_pread(fd, &c, 1, st.st_size - 1) != 1 ||
	    c == '\n')
		return 0;
	if (abuf_grow(ab, 2) == -1)
		return -1;
	memmove(ab->p + 2, ab->p, ab->len);
	ab->p[0] = ' ';
	ab->p[1] = '\n';
	ab->len += 2;
	return 0;
}

static int
audit_open(struct spool *sp, const char *name, int flags)
{
	int fd;

	fd = sys_openat(sp->auditfd, name, O_RDWR | flags, 0666);
	if (fd == -1 && errno == EACCES)
		fd = sys_openat(sp->auditfd, name, O_WRONLY | flags, 0666);
	return fd;
}

/*
 * Append the buffered lines to this host's log in one write, not synced:
 * *fdp is the log, open, for the caller to sync (commit_sync syncs it with
 * the rest of a transition), *created 1 if this write made the file, whose
 * name then needs audit/ synced.  With nothing buffered, *fdp is -1.
 */
int
audit_write(struct spool *sp, struct abuf *ab, int *fdp, int *created)
{
	char name[HOST_MAX + 8];
	int fd, e;

	*fdp = -1;
	*created = 0;
	if (ab->len == 0)
		return 0;
	(void)snprintf(name, sizeof(name), "%s.log", sp->host);
	fd = audit_open(sp, name,
	    O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd == -1 && errno == ENOENT) {
		fd = audit_open(sp, name,
		    O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW);
		*created = fd != -1;
		if (fd == -1 && errno == EEXIST)
			fd = audit_open(sp, name,
			    O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	}
	if (fd == -1)
		return -1;
	if ((*created && file_mode(sp, fd, 0660) == -1) ||
	    (!*created && mend_tail(fd, ab) == -1) ||
	    write_all(fd, ab->p, ab->len) == -1) {
		e = errno;
		(void)close_fd(fd);
		errno = e;
		return -1;
	}
	crash_point("audit-written");
	*fdp = fd;
	return 0;
}

/*
 * The lines made durable after a write of their own: closing the log
 * (which reports a write error too), and syncing audit/ if the write made
 * the log.
 */
int
audit_done(struct spool *sp, struct abuf *ab, int fd, int created)
{
	if (fd == -1)
		return 0;
	if (close_fd(fd) == -1)
		return -1;
	if (created && sync_dir(sp->auditfd, ".") == -1)
		return -1;
	ab->len = 0;
	return 0;
}

/* Write the buffered lines and wait for them alone. */
int
audit_flush(struct spool *sp, struct abuf *ab)
{
	int fd, created, e;

	if (audit_write(sp, ab, &fd, &created) == -1)
		return -1;
	if (fd != -1 && sync_fd(fd) == -1) {
		e = errno;
		(void)close_fd(fd);
		errno = e;
		return -1;
	}
	return audit_done(sp, ab, fd, created);
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

/*
 * Where a scan left a file: the end of its last complete line.  With
 * add, a file not seen before is added at 0; without, it is NULL.
 */
static struct audit_mark_file *
mark_of(struct audit_mark *m, const struct stat *st, int add)
{
	struct audit_mark_file *mf;
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->files[i].dev == st->st_dev &&
		    m->files[i].ino == st->st_ino)
			return &m->files[i];
	if (!add)
		return NULL;
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 8;
		if ((mf = realloc(m->files, m->cap * sizeof(*mf))) == NULL)
			return NULL;
		m->files = mf;
	}
	mf = &m->files[m->n++];
	memset(mf, 0, sizeof(*mf));
	mf->dev = st->st_dev;
	mf->ino = st->st_ino;
	return mf;
}

/*
 * Nothing appended since the mark, known without opening the file: the
 * same size and change time.  Not in multi-host mode, where a client may
 * answer a stat from its cache, and only an open asks the server.
 */
static int
mark_unchanged(struct spool *sp, struct audit_mark *m, const char *name)
{
	struct audit_mark_file *mf;
	struct stat st;

	return !sp->multi_host && fstatat(sp->auditfd, name, &st,
	    AT_SYMLINK_NOFOLLOW) == 0 && (mf = mark_of(m, &st, 0)) != NULL &&
	    mf->off == st.st_size && mf->ctim.tv_sec == st.st_ctim.tv_sec &&
	    mf->ctim.tv_nsec == st.st_ctim.tv_nsec;
}

/*
 * Where to read fd from: the mark, if the bytes before it are still those
 * read then; else 0.  -1 on a read error.
 */
static off_t
mark_start(int fd, const struct audit_mark_file *mf, off_t size)
{
	char b[AUDIT_MARK_TAIL];
	ssize_t n;

	if (mf->off == 0 || mf->off > size)
		return 0;
	n = sys_pread(fd, b, mf->ntail, mf->off - (off_t)mf->ntail);
	if (n == -1)
		return -1;
	return (size_t)n == mf->ntail && memcmp(b, mf->tail, mf->ntail) == 0 ?
	    mf->off : 0;
}

void
audit_mark_free(struct audit_mark *m)
{
	free(m->files);
	memset(m, 0, sizeof(*m));
}

/*
 * The lines of one log, from pos on, to fn; -1 on a read error or fn's.
 * *end: after its last whole line; *longat: where a line too long for the
 * buffer began, or -1.  A line longer than the buffer is not ours: it is
 * skipped.
 */
static int
scan_file(int fd, off_t pos, int (*fn)(void *arg, const char *line,
    size_t len), void *arg, off_t *end, off_t *longat)
{
	char buf[65536];
	size_t have = 0;
	ssize_t n;
	char *p, *nl;
	int rv = 0;

	*longat = -1;
	while (rv == 0 && (n = read_full(fd, buf + have,
	    sizeof(buf) - have)) > 0) {
		have += (size_t)n;
		for (p = buf; rv == 0 && (nl = memchr(p, '\n',
		    have - (size_t)(p - buf))) != NULL; p = nl + 1)
			if (*longat == -1)
				rv = fn(arg, p, (size_t)(nl - p));
			else
				*longat = -1;	/* its tail */
		pos += (off_t)(p - buf);
		have -= (size_t)(p - buf);
		memmove(buf, p, have);
		if (have == sizeof(buf)) {
			if (*longat == -1)
				*longat = pos;
			pos += (off_t)have;
			have = 0;
		}
	}
	*end = pos;
	return rv == 0 && n == -1 ? -1 : rv;
}

/*
 * The mark of a file read to end: after its last whole line, so that a
 * torn last line (or a long one) is read again from its start, with the
 * bytes before it and the change time, to know the file again.
 */
static void
mark_end(int fd, struct audit_mark_file *mf, const struct stat *st,
    off_t off)
{
	size_t k;

	mf->off = off;
	mf->ctim = st->st_ctim;
	mf->ntail = 0;
	if (mf->off == 0)
		return;
	k = mf->off < AUDIT_MARK_TAIL ? (size_t)mf->off : AUDIT_MARK_TAIL;
	if (sys_pread(fd, mf->tail, k, mf->off - (off_t)k) == (ssize_t)k)
		mf->ntail = k;
	else
		mf->off = 0;	/* read all next time */
}

/* One log of audit/, named name: its lines since m's mark, to fn. */
static int
scan_one(struct spool *sp, struct audit_mark *m, const char *name,
    int (*fn)(void *arg, const char *line, size_t len), void *arg)
{
	struct audit_mark_file *mf = NULL;
	struct stat st;
	off_t pos = 0, end, longat;
	int fd, rv = 0;

	fd = sys_openat(sp->auditfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK, 0);
	if (fd == -1)	/* rotated away meanwhile; a symlink: no lines */
		return errno == ENOENT || errno == ELOOP ? 0 : -1;
	if (m != NULL && (fstat(fd, &st) == -1 ||
	    (mf = mark_of(m, &st, 1)) == NULL ||
	    (pos = mark_start(fd, mf, st.st_size)) == -1 ||
	    lseek(fd, pos, SEEK_SET) == -1))
		rv = -1;
	if (rv == 0 && (rv = scan_file(fd, pos, fn, arg, &end,
	    &longat)) == 0 && mf != NULL)
		mark_end(fd, mf, &st, longat != -1 ? longat : end);
	(void)close_fd(fd);	/* read-only; a torn last line is ignored */
	return rv;
}

/*
 * Every file of audit/: HOST.log and whatever rotation named it, except
 * those it compressed, which are not lines.  A file that cannot be read
 * fails the scan: unread, its lines would seem missing.
 */
int
audit_scan(struct spool *sp, struct audit_mark *m,
    int (*fn)(void *arg, const char *line, size_t len), void *arg)
{
	struct dirent *de;
	struct dlist *d;
	int rv = 0;

	if ((d = dir_list(sp->auditfd)) == NULL)
		return -1;
	while (rv == 0 && (errno = 0, de = dir_next(d)) != NULL) {
		if (de->d_name[0] == '.' || compressed(de->d_name) ||
		    (m != NULL && mark_unchanged(sp, m, de->d_name)))
			continue;
		rv = scan_one(sp, m, de->d_name, fn, arg);
	}
	if (rv == 0 && errno != 0)
		rv = -1;
	dir_close(d);
	return rv;
}

int
spool_audit_scan(struct spool *sp,
    int (*fn)(void *arg, const char *line, size_t len), void *arg)
{
	return audit_scan(sp, NULL, fn, arg);
}
