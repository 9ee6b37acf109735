/*
 * Limits: config's limit.KEY=N (at most N leases of jobs with that key at
 * once) and rate.KEY=N/DUR (at most N claims of them in any window of
 * DUR), and the slots a claim takes to honour them (spool-layout.md,
 * "Slots").
 *
 * Invariant: a lease of a keyed job is held only by a claim that found,
 * under the key's lock, fewer live slots than the limit, and made its own
 * slot before it let the lock go.  A slot is a name in slots/KEY/: the
 * job's ID for a lease, @TIME,ID for a claim that a rate counts.  A slot
 * is live while its job is leased, or, before the claim's record, until
 * the lease it asked for would end (slot_live).  So the count is derived
 * from the leases: a slot whose lease has ended is dead the moment it is
 * looked at, and removed then.  The claim syncs slots/KEY/ after it lets
 * the lock go and before it records a lease, so no lease can outlive a
 * power cut without its slot, and no lock is held across a sync.
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

/* The entry for key, or a new one (NULL: too many keys). */
static struct spool_limit *
limit_entry(struct spool *sp, const char *key)
{
	struct spool_limit *l;
	int i;

	for (i = 0; i < sp->nlimits; i++)
		if (strcmp(sp->limits[i].key, key) == 0)
			return &sp->limits[i];
	if (sp->nlimits == LIMITS_MAX)
		return NULL;
	l = &sp->limits[sp->nlimits++];
	memset(l, 0, sizeof(*l));
	l->limit = -1;
	(void)snprintf(l->key, sizeof(l->key), "%s", key);
	return l;
}

/* A count of 0 to LIMIT_MAX, in decimal. */
static int
count(const char *s, size_t len, int min, int *n)
{
	int64_t v;

	if (dec18(s, len, &v) == -1 || v < min || v > LIMIT_MAX)
		return -1;
	*n = (int)v;
	return 0;
}

/*
 * A line of config, split at its '=': 1 if it is a limit or a rate, taken;
 * 0 if it is neither.  If it is one, malformed: -1 for its value, with
 * *form what was expected, as config's errors say it; -2 for its key; -3
 * for a key past the 64 that may have one.
 */
int
limit_line(struct spool *sp, const char *name, const char *val,
    const char **form)
{
	const char *key, *slash, *dur;
	struct spool_limit *l;
	char one[8];
	int rate;

	if (strncmp(name, "limit.", 6) == 0)
		rate = 0;
	else if (strncmp(name, "rate.", 5) == 0)
		rate = 1;
	else
		return 0;
	key = name + (rate ? 5 : 6);
	if (!spool_valid_key(key))
		return -2;
	if ((l = limit_entry(sp, key)) == NULL)
		return -3;
	*form = "a whole number from 0 to 1000000";
	if (!rate)
		return count(val, strlen(val), 0, &l->limit) == 0 ? 1 : -1;
	*form = "N/DUR, N from 1 to 1000000, such as 5/1s, 100/m or 10/30s";
	if ((slash = strchr(val, '/')) == NULL ||
	    count(val, (size_t)(slash - val), 1, &l->rate) == -1)
		return -1;
	/* A unit alone is one of it, as people write rates: 5/s, 100/m. */
	dur = slash + 1;
	if (dur[0] >= 'a' && dur[0] <= 'z' && strlen(dur) < 3) {
		(void)snprintf(one, sizeof(one), "1%s", dur);
		dur = one;
	}
	if (spool_parse_duration(dur, &l->window_ms) == -1 ||
	    l->window_ms <= 0)
		return -1;
	return 1;
}

const struct spool_limit *
limit_of(const struct spool *sp, const char *key)
{
	int i;

	if (key[0] == '\0')
		return NULL;
	for (i = 0; i < sp->nlimits; i++)
		if (strcmp(sp->limits[i].key, key) == 0)
			return &sp->limits[i];
	return NULL;
}

/*
 * Is the slot live?  Its file holds "PREV SIZE UNTIL": the job's token
 * and its sidecar's size when the claim made it, holding the sidecar's
 * lock, and the lease that claim asked for.  While the sidecar has neither
 * a later token nor more records, the claim may be under way: the slot is
 * live until UNTIL, plus the spool's skew.  Once it has, the claim took
 * effect, or ended and someone else wrote since: the slot is live while
 * the job's record says leased, even past its until.  A renew is accepted
 * then, until a claim takes the job over; and that claim, of the same job,
 * takes the slot with it.  A slot whose file is empty (a power cut) goes
 * by the record alone.  No lock is tried: a lease, not a lock a killed
 * client may keep, gives a slot back.
 */
static int
slot_live(struct spool *sp, int dirfd, const char *id, int64_t now)
{
	char buf[80];
	uint64_t prev = 0;
	int64_t until = 0, size = 0;
	struct job j;
	ssize_t n;
	int fd, live, known = 0;

	if ((fd = sys_openat(dirfd, id, O_RDONLY | O_NOFOLLOW | O_CLOEXEC,
	    0)) != -1) {
		n = read_full(fd, buf, sizeof(buf) - 1);
		(void)close_fd(fd);	/* read-only */
		if (n > 0) {
			buf[n] = '\0';
			known = sscanf(buf, "%" SCNu64 " %" SCNd64 " %" SCNd64,
			    &prev, &size, &until) == 3;
		}
	}
	if (job_peek(sp, id, &j) == -1) {
		/* Gone, or damaged: spool-fsck reports it.  Else: unreadable
		 * for now, so held, but no longer than its claim asked. */
		if (errno == ENOENT || errno == EUCLEAN)
			return 0;
		return !known || until + sp->skew_ms > now;
	}
	/*
	 * The records as read, not the file as it is after: a record
	 * appended between the read and a stat would make the claim look
	 * ended with a record that says new.  A record half written is not
	 * one yet.
	 */
	if (known && j.cur.tok <= prev && (int64_t)j.valid <= size)
		live = until + sp->skew_ms > now;
	else
		live = j.cur.loc == SPOOL_LEASED;
	job_close(&j);
	return live;
}

/* slots/KEY/, made if it must be: its directories go in ds. */
static int
open_slots(struct spool *sp, const char *key, struct dirset *ds)
{
	char rel[NAME_MAX_SPOOL];
	int fd, i;

	(void)snprintf(rel, sizeof(rel), "slots/%s", key);
	for (i = 0; i < 3; i++) {
		fd = sys_openat(sp->dirfd, rel, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC, 0);
		if (fd != -1 || errno != ENOENT)
			return fd;
		if (mkdir_mode(sp, sp->dirfd, "slots") == 0) {
			if (dirset_add(ds, ".") == -1)
				return -1;
		} else if (errno != EEXIST)
			return -1;
		if (mkdir_mode(sp, sp->dirfd, rel) == 0) {
			if (dirset_add(ds, "slots") == -1)
				return -1;
		} else if (errno != EEXIST)
			return -1;
	}
	return fd;
}

/*
 * Make a slot, holding text; one already there is ours (a takeover's).
 * Its text is not synced: after a power cut only the name counts.
 */
static int
make_slot(struct spool *sp, int dirfd, const char *name, const char *text)
{
	int fd;

	fd = sys_openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC |
	    O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd == -1)
		return -1;
	if (file_mode(sp, fd, 0660) == -1 ||
	    write_all(fd, text, strlen(text)) == -1) {
		(void)close_fd(fd);
		return -1;
	}
	return close_fd(fd);
}

/*
 * Count the live slots of slots/KEY/ (dirfd), removing the dead: held,
 * the leases but id's own; claims, the rate's names less than window old.
 */
static int
count_slots(struct spool *sp, int dirfd, const char *id, int64_t now,
    int64_t window, int *held, int *claims)
{
	struct dirent *de;
	int64_t t;
	char *comma;
	struct dlist *d;

	*held = *claims = 0;
	if ((d = dir_list(dirfd)) == NULL)
		return -1;
	while ((errno = 0, de = dir_next(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (de->d_name[0] == '@') {
			comma = strchr(de->d_name, ',');
			if (comma != NULL && dec18(de->d_name + 1,
			    (size_t)(comma - de->d_name - 1), &t) == 0 &&
			    t + sp->skew_ms > now - window)
				(*claims)++;
			else
				(void)sys_unlinkat(dirfd, de->d_name, 0);
			continue;
		}
		if (strcmp(de->d_name, id) == 0 || !spool_valid_id(de->d_name))
			continue;
		if (slot_live(sp, dirfd, de->d_name, now))
			(*held)++;
		else
			(void)sys_unlinkat(dirfd, de->d_name, 0);
	}
	dir_close(d);
	return errno != 0 ? -1 : 0;
}

/*
 * May job j be claimed now, for a lease until then?  1: yes, and its
 * slots are made (slots/KEY/ goes in ds, to be synced before the claim);
 * 0: its key is at its limit or its rate, pass it over; -1 with errno
 * (EWOULDBLOCK: nonblock, and the key's lock is busy).  The caller holds
 * the job's sidecar lock, and has not yet recorded.
 */
int
slot_take(struct spool *sp, const struct job *j, int64_t now, int64_t until,
    int nonblock, struct dirset *ds)
{
	char rel[NAME_MAX_SPOOL], name[SPOOL_ID_MAX + 32], text[80];
	const char *key = j->cur.key, *id = j->id;
	const struct spool_limit *l = limit_of(sp, key);
	int dirfd, lockfd = -1, held, claims, rv = -1, e;
	struct stat st;

	if (l == NULL)
		return 1;
	if (fstat(j->fd, &st) == -1)
		return -1;
	if ((dirfd = open_slots(sp, key, ds)) == -1)
		return -1;
	lockfd = sys_openat(dirfd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0666);
	if (lockfd == -1 || file_mode(sp, lockfd, 0660) == -1 ||
	    lock_fd(sp, lockfd, nonblock) == -1 ||
	    count_slots(sp, dirfd, id, now, l->window_ms, &held, &claims) == -1)
		goto out;
	rv = (l->limit < 0 || held < l->limit) && (l->rate == 0 ||
	    claims < l->rate);
	(void)snprintf(text, sizeof(text), "%" PRIu64 " %" PRId64 " %" PRId64
	    "\n", j->cur.tok, (int64_t)st.st_size, until);
	if (rv == 1 && l->limit >= 0 && make_slot(sp, dirfd, id, text) == -1)
		rv = -1;
	(void)snprintf(name, sizeof(name), "@%" PRId64 ",%s", now, id);
	if (rv == 1 && l->rate > 0 && make_slot(sp, dirfd, name, "") == -1)
		rv = -1;
	(void)snprintf(rel, sizeof(rel), "slots/%s", key);
	if (rv == 1 && dirset_add(ds, rel) == -1)
		rv = -1;
out:
	e = errno;
	if (lockfd != -1)
		(void)close_fd(lockfd);	/* and its lock: nothing to sync */
	(void)close_fd(dirfd);	/* synced by the claim, through ds */
	errno = e;
	return rv;
}
