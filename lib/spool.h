/*
 * libspool: a durable job queue that is a directory.
 *
 * A spool is a directory.  Each job is one file holding its payload bytes,
 * never rewritten; the job's state is the directory its file is in (new/,
 * leased/, done/, dead/), and every change of state is one rename(2).  The
 * mutable facts about a job (lease token, attempts, cycles, lease holder,
 * history) live in its sidecar, meta/ID, an append-only record log that is
 * read and extended under flock(2).  Every transition also appends one line
 * to the audit log.  spool(7) states what a spool promises;
 * spool-layout.md is the complete on-disk specification; this header is
 * the programming contract that keeps those promises.
 *
 * States, and the calls that move a job between them:
 *
 *	  enqueue        claim              finish ok
 *	 ---------> new ------> leased ------------------> done
 *	             ^  <------   |                         ^
 *	             |  retry,    | permanent, attempts     |
 *	             |  release   | spent, deadline passed, |
 *	             |            | cancel                  |
 *	             |            v                         |
 *	             +---------- dead ----------------------+
 *	               redrive                  drop
 *
 * A claim takes over an expired lease: leased to leased, a new token.
 * Cancel parks a queued job too, and a claim parks one whose deadline
 * has passed: new to dead.  Enqueueing the ID of a done job starts its
 * next cycle: done to new.  Purge removes done jobs for good.
 *
 * Calling sequence:
 *
 *	sp = spool_open(dir);                      once per process
 *	spool_enqueue(sp, jobs, n);                producers
 *	spool_claim(sp, &opts, out, max, &n);      workers ...
 *	spool_renew(sp, id, token, lease, &res);   ... while they work
 *	spool_finish(sp, fins, n);                 ... when they are done
 *	spool_redrive(sp, &op, items, n);          operators
 *	spool_close(sp);
 *
 * Return convention: functions return 0 on success and -1 with errno set on
 * failure.  The seven batch calls (spool_enqueue, spool_finish,
 * spool_finish_claim, spool_redrive, spool_drop, spool_cancel and
 * spool_purge) report on every item in its own struct spool_result and
 * return -1 only when something went wrong that is not about one item.
 * spool_claim returns 1 (claimed), 0 (nothing eligible) or -1.  The
 * library never prints and never exits.
 *
 * Durability: when a call reports an item done, that item's transition is
 * durable: file data fsync'd before its name was published, every directory
 * renamed into fsync'd after the last rename there, the sidecar record and
 * the audit line fsync'd.  A batch shares its directory and audit fsyncs.
 *
 * After a crash: a transition is complete when its rename is; the sidecar
 * record written before it is void until then and is marked so by the next
 * writer.  Every call that touches a job first settles what an interrupted
 * transition left behind (spool-layout.md, "Crashes"), so a crash never
 * needs a person.
 *
 * Threads: a struct spool may be used by one thread at a time; the
 * counters of spool_get_counters() are the process's, not per thread.
 *
 * Defaults: every struct a caller fills may start zeroed, and name only
 * what matters: { .id = id, .fd = fd } is a job with the spool's
 * defaults, { .id = id, .token = t, .outcome = SPOOL_OK } a finish, and
 * { 0 } a claim's options.  Zero is the default wherever a field has one.
 * A retry's or release's delay_ms is the one zero that means a value: 0
 * is "at once", as it always was, and -1 asks for the spool's backoff.
 */
#ifndef SPOOL_H
#define SPOOL_H

#include <stddef.h>
#include <stdint.h>

#define SPOOL_FORMAT	2	/* on-disk format this library makes; it reads
				   and writes format 1 too (spool_upgrade) */
#define SPOOL_ID_MAX	128	/* longest ID, note, owner or trace, in bytes */
#define SPOOL_DETAIL_MAX 200	/* longest detail kept, in bytes */
#define SPOOL_TOKEN_MAX	UINT64_C(999999999999999999)
				/* largest token, 10^18-1: a record
				   holds 18 digits; the counter stops
				   short of it, a claim fails (EOVERFLOW) */
#define SPOOL_HOST_MAX	64	/* longest host ID, in bytes */
#define SPOOL_KEY_MAX	64	/* longest key, in bytes: spool_valid_key */
#define SPOOL_BATCH_MAX	256	/* most items one call may carry: each holds
				   a descriptor until the batch commits */

struct spool;

/* Where a job is. */
enum spool_state {
	SPOOL_ABSENT,		/* no such job (or its file was never published) */
	SPOOL_NEW,		/* queued: ready, or scheduled for later */
	SPOOL_LEASED,		/* claimed, under a lease */
	SPOOL_DONE,		/* finished ok (or dropped) */
	SPOOL_DEAD		/* parked, waiting for a person */
};

/* How a delivery ended. */
enum spool_outcome {
	SPOOL_OK = 1,		/* to done/ */
	SPOOL_RETRY,		/* to new/ after a delay, unless spent */
	SPOOL_PERMANENT,	/* to dead/ at once */
	SPOOL_RELEASE		/* to new/ unused, attempt not spent */
};

/* The closed set of failure classes: spool(7), "Failure classes". */
enum spool_class {
	SPOOL_CLASS_NONE,
	SPOOL_CLASS_TRANSIENT,
	SPOOL_CLASS_RATE_LIMITED,
	SPOOL_CLASS_DEPENDENCY_DOWN,
	SPOOL_CLASS_INVALID_INPUT,
	SPOOL_CLASS_PERMISSION,
	SPOOL_CLASS_CANCELLED,
	SPOOL_CLASS_UNKNOWN_SIDE_EFFECT,
	SPOOL_CLASS_CRASHED,
	SPOOL_CLASS_TIMEOUT,
	SPOOL_CLASS_LEASE_EXPIRED
};

/* Why a job is parked in dead/. */
enum spool_reason {
	SPOOL_REASON_NONE,
	SPOOL_REASON_PERMANENT,		/* finished permanent */
	SPOOL_REASON_EXHAUSTED,		/* attempts spent */
	SPOOL_REASON_DEADLINE,		/* its deadline passed */
	SPOOL_REASON_SIDE_EFFECT,	/* class unknown-side-effect: reconcile */
	SPOOL_REASON_CANCELLED		/* an operator cancelled it */
};

/* Why an item was refused: a negative answer, not an error. */
enum spool_refusal {
	SPOOL_NO_NONE,
	SPOOL_NO_EXISTS,	/* enqueue: the ID is queued, leased or parked */
	SPOOL_NO_JOB,		/* no job has this ID */
	SPOOL_NO_STALE,		/* token is not the current one */
	SPOOL_NO_NOT_LEASED,	/* finish/renew: the job is not leased */
	SPOOL_NO_NOT_PARKED,	/* redrive: the job is not in dead/ */
	SPOOL_NO_UNRECONCILED,	/* redrive: side effect may have happened */
	SPOOL_NO_NOT_QUEUED,	/* cancel: the job is not in new/ or leased/ */
	SPOOL_NO_NOT_DONE,	/* purge: the job is not in done/ */
	SPOOL_NO_CHANGED,	/* item.before: it moved after it was selected */
	SPOOL_NO_EDITED,	/* redrive: its payload is not the one recorded */
	SPOOL_NO_NOT_MISSING	/* purge --missing: the job's file is there */
};

/* What became of one item of a batch call. */
struct spool_result {
	int status;		/* 0 done, 1 refused, -1 failed */
	int refusal;		/* status 1: enum spool_refusal */
	int err;		/* status -1: errno */
	int changed;		/* status -1: the transition took effect but
				   was not made durable (retrying is safe) */
	enum spool_state state;	/* refused: where the job is; done: where it
				   went */
	uint64_t token;		/* the job's current token */
	int reason;		/* done into dead/: enum spool_reason */
};

/*
 * Errors.  A call that fails sets errno (or res.err for one item of a
 * batch).  Each value below means one thing from the calls named.  100:
 * no retry can help, a person must act, and a command exits 100.  111: a
 * retry may succeed, and a command exits 111.  An errno not listed is a
 * failed system call's (ENOSPC, EIO, ...): 111, and the job is as it was
 * or is settled by the next call on it (spool-layout.md, "Crashes").
 *
 *   when  errno       from               means                       exit
 *   OPEN  ENOENT      spool_open         no such directory            100
 *   OPEN  ENOTDIR     spool_open         not a directory              100
 *   OPEN  ENODATA     spool_open         a directory, not a spool:    100
 *                                        no format file
 *   OPEN  EPROTO      spool_open         a format this library does   100
 *                                        not know
 *   OPEN  EBADMSG     spool_open         config malformed:            100
 *                                        spool_config_error says where
 *   OPEN  EUCLEAN     spool_open         a state directory is missing 100
 *   OPEN  EACCES      spool_open         no permission: a person      100
 *                                        grants it
 *   OPEN  EPERM       spool_open         no permission, as EACCES     100
 *   OPEN  EMLINK      spool_open         dir is a symlink             100
 *   OPEN  ENOLCK      spool_open         multi-host, on a file system 100
 *                                        or mount that cannot serve
 *                                        several hosts: spool_fs_error
 *                                        says why
 *   OPEN  EXDEV       spool_open         syncfs=yes where it cannot   100
 *                                        hold: several hosts or disks
 *   OPEN  EADDRINUSE  spool_open         this host's ID was another   100
 *                                        machine's in the last 10 min
 *   INIT  ENOENT      spool_init         no such parent directory     100
 *   INIT  ENOTDIR     spool_init         not a directory              100
 *   INIT  EEXIST      spool_init         dir holds what is not a      100
 *                                        spool's
 *   INIT  EPROTO      spool_init         a spool of another format    100
 *   INIT  EMLINK      spool_init         dir is a symlink             100
 *   INIT  ESRCH       spool_init         no such group                100
 *   CALL  EINVAL      any other call     an argument out of range     100
 *   CALL  ERANGE      spool_enqueue,     a delay that reaches past    100
 *                     spool_finish       the job's deadline
 *   CALL  EUCLEAN     a call on a job    the job is damaged:          100
 *                                        spool-fsck --repair
 *   CALL  EDQUOT      spool_enqueue      free space below the         111
 *                                        reserve (or a quota)
 *   CALL  EOVERFLOW   spool_claim        the token counter is spent   111
 *   OPEN  ETIMEDOUT   spool_open,        a lock stayed held 30 s      111
 *                     multi-host
 *   CALL  ETIMEDOUT   any other call,    the same                     111
 *                     multi-host
 *
 * spool_error(err, when) gives the row of err: when is SPOOL_AT_OPEN for
 * spool_open's errors, SPOOL_AT_INIT for spool_init's and SPOOL_AT_CALL
 * for the others'.  status is the command's exit; text is what a command
 * prints after the spool's path, the job's ID or the group, or NULL where
 * strerror(err) says it.  An errno with no row gives err 0, status 111
 * and text NULL.  spool_job_info's ENOENT, no such job, is an answer, not
 * a failure: a command exits 1.
 */
enum { SPOOL_AT_OPEN, SPOOL_AT_INIT, SPOOL_AT_CALL };
struct spool_error {
	int err;
	int status;		/* 100 or 111 */
	const char *text;	/* NULL: strerror(err) */
};
const struct spool_error *spool_error(int err, int when);

/*
 * The one line a command prints for an item's result res, the job's ID
 * first, into buf of len bytes; and the status it exits with: 1 for a
 * refusal, 100 or 111 for a failure, from the table above.  Most
 * refusals say where the job is; a damaged job, the command that records
 * a file removed on purpose; a failure whose transition took effect, that
 * a retry is safe.  An item done gives 0 and "".  The commands and the
 * Python package say it so.
 */
int spool_result_text(const char *id, const struct spool_result *res,
    char *buf, size_t len);

/*
 * Open the spool at dir.  Checks the format version and reads the spool's
 * defaults from its config file.  Returns NULL with errno set on failure,
 * as "Errors" above says.  In multi-host mode (config multi-host=yes, which
 * needs skew=DUR) the host's ID is $SPOOL_HOST, /etc/spool-host or the
 * host name; EADDRINUSE says another machine used it.  A handle's
 * settings are its own: in multi-host mode a wait for a lock through it
 * is bounded (spool-layout.md, "Several hosts"), not through another.
 */
struct spool *spool_open(const char *dir);
void spool_close(struct spool *sp);

/*
 * After spool_open() failed with EBADMSG: the number of the first line of
 * dir's config at fault (for multi-host=yes without skew, that line; for
 * backoff-max below backoff, the later of the two), or 0 if no line is (a
 * file longer than 4095 bytes); -1 with errno if it cannot be read.
 * spool_config_error() also writes why into why, of len bytes: the key,
 * what was given and the form expected, such as "lease=forever: not a
 * duration above 0, such as 500ms, 30s, 5m, 2h or 7d"; "" when it
 * returns 0 or -1.
 */
int spool_config_line(const char *dir);
int spool_config_error(const char *dir, char *why, size_t len);

/*
 * After spool_open() failed with ENOLCK: 1, and why the mount that holds
 * dir cannot serve several hosts, in one phrase into why, of len bytes:
 * its type, the option at fault and the rule it breaks, such as "NFS
 * mounted soft: a call that times out may still be made (mount it
 * hard)".  0 if the mount passes; -1 with errno if dir cannot be
 * resolved.
 */
int spool_fs_error(const char *dir, char *why, size_t len);


/*
 * This process's host ID, as it names its audit file and its entry in
 * hosts/, into buf of SPOOL_HOST_MAX + 1 bytes.
 */
const char *spool_host(char *buf);

/* The spool's settings, from its config file (host: this writer's ID). */
struct spool_settings {
	int64_t lease_ms, deadline_ms, backoff_ms, backoff_max_ms;
	int max_attempts;
	int multi_host;
	int64_t skew_ms;	/* a lease is taken over skew after it ends */
	const char *host;
	int64_t timeout_ms;	/* a handler's longest run (spool-run); 0:
				   none */
};
void spool_settings(struct spool *sp, struct spool_settings *s);

/* A key's limit and rate, from config (spool(7), "Limits"). */
struct spool_limit {
	char key[SPOOL_KEY_MAX + 1];
	int limit;		/* leases at once; -1: none */
	int rate;		/* claims in a window; 0: none */
	int64_t window_ms;	/* the rate's window */
};
/* The limits config has now, up to max of them; returns how many it has. */
size_t spool_limits(struct spool *sp, struct spool_limit *out, size_t max);

/*
 * The room left on the spool's file system, as statvfs(3) reports it to an
 * unprivileged process, beside the reserve its config keeps for draining
 * (spool(7), reserve).  1 if it is below either, 0 if not, -1 with errno.
 * Below it, enqueue refuses jobs (EDQUOT).  held_*: what the spool holds
 * of the reserve in reserve/ (holding 0: no enqueue has made it yet).
 */
struct spool_room {
	uint64_t free_bytes, reserve_bytes;
	uint64_t free_inodes, reserve_inodes;	/* free_inodes UINT64_MAX:
						   no inode count */
	int holding;
	uint64_t held_bytes, held_bytes_max;	/* max: the reserve, <= 1M */
	uint64_t held_inodes, held_inodes_max;
};
int spool_room(struct spool *sp, struct spool_room *r);

/*
 * The system clock: 1 if the kernel says it is synchronised (adjtimex(2),
 * as NTP or chrony keep it), else 0; *maxerror_ms its maximum error, or -1.
 */
int spool_clock(int64_t *maxerror_ms);

/*
 * Create the spool layout at dir, of format 2, or complete a layout that an
 * interrupted init left (a spool of format 1 stays so).  Idempotent.
 * Refuses (EEXIST) a directory that holds anything that is not part of a
 * spool, (EPROTO) a spool of another format, and (EMLINK) a dir that is a
 * symlink.
 * group: NULL, or a group name; then the directories are setgid and owned by
 * that group and every file the spool creates is group-writable.
 */
int spool_init(const char *dir, const char *group);

/*
 * Upgrade a spool of format 1 to format 2 (spool-layout.md, "Formats"):
 * the spool-wide token counter is made, starting above every token its
 * sidecars and leases hold, then the format file says 2.  Versions that
 * know only format 1 refuse the spool afterwards (EPROTO), so every host
 * runs this version first.  Until then this version works a format-1
 * spool as format 1 did: tokens counted per ID, sidecars kept for ever.
 * 0 on a spool of format 2 already.  Errors as spool_open's.
 */
int spool_upgrade(const char *dir);

/* Enqueue. */
struct spool_job {
	/* in */
	const char *id;		/* NULL: a UUID is made and put in idbuf */
	int fd;			/* payload, read to end of file */
	const char *trace;	/* trace/correlation ID, or NULL */
	const char *key;	/* the job's key, for the spool's limits
				   (spool(7), "Limits"), or NULL: none */
	int max_attempts;	/* 0: the spool's default */
	int64_t deadline_ms;	/* time allowed from now; 0 or -1: default */
	int64_t delay_ms;	/* eligible after this long; 0: at once */
	/* out */
	char idbuf[SPOOL_ID_MAX + 1];
	struct spool_result res;
};

/*
 * Publish each job: its payload is copied into tmp/, fsync'd, recorded in
 * its sidecar, then renamed into new/.  An ID that is queued, leased or
 * parked is refused (SPOOL_NO_EXISTS, res.state says where).  An ID whose
 * job is done starts a new cycle, and the previous cycle's file leaves
 * done/ in the same call.  IDs must pass spool_valid_id(); an item fails
 * with EINVAL if a field is out of range, ERANGE if its delay reaches its
 * deadline (it could never be delivered).  An ID named twice in one call:
 * the second is refused as a duplicate.
 */
int spool_enqueue(struct spool *sp, struct spool_job *jobs, size_t n);

/* Claim. */
struct spool_claim_opts {
	int64_t lease_ms;	/* lease length; 0: the spool's default */
	const char *owner;	/* lease holder's name (spool_valid_owner);
				   NULL: this process, HOST:PID */
};

struct spool_lease {
	char id[SPOOL_ID_MAX + 1];
	uint64_t token;		/* fencing token: never handed out twice, and
				   strictly increasing per ID (spool(7),
				   "Fencing tokens") */
	int attempt;		/* 1 for the first delivery of a cycle */
	int cycle;		/* 1 for the first cycle */
	int64_t lease_until;	/* ms since the epoch */
	char trace[SPOOL_ID_MAX + 1];
	char *path;		/* absolute path of the job file (malloc'd;
				   spool_free_leases() frees) */
};

/*
 * Claim up to max eligible jobs, oldest eligible time first.  Expired leases
 * are taken over first (each with a higher token); a job whose attempts are
 * spent, or whose deadline has passed, parks instead of being delivered.
 * Returns 1 with *n > 0 leases in out, 0 when nothing is eligible (or the
 * spool is paused: spool_paused), -1 on error with *n = 0 (leases it took
 * but could not make durable simply expire).  A job that cannot be taken
 * (unreadable, a failed write) is passed over, so it cannot stop the
 * queue; if nothing was claimed, its error is the call's.
 */
int spool_claim(struct spool *sp, const struct spool_claim_opts *opts,
    struct spool_lease *out, size_t max, size_t *n);
void spool_free_leases(struct spool_lease *l, size_t n);

/*
 * When a claim may next find something: the earliest eligible time in
 * new/, or the earliest lease expiry (not before a claim would look), in ms
 * since the epoch; INT64_MAX if nothing is queued or leased.  A time in the
 * past means now.  For a worker that sleeps until then.
 */
int spool_next_due(struct spool *sp, int64_t *when);

/*
 * Extend the lease that token names to now + lease_ms (0: the spool's
 * default), or keep its expiry if that is later: a renew never shortens a
 * lease.  Refused (SPOOL_NO_STALE) if another claim took the job,
 * (SPOOL_NO_NOT_LEASED) if the job is no longer leased.
 */
int spool_renew(struct spool *sp, const char *id, uint64_t token,
    int64_t lease_ms, struct spool_result *res);

/* Finish. */
struct spool_finish {
	/* in */
	const char *id;
	uint64_t token;
	enum spool_outcome outcome;
	enum spool_class class;	/* retry, permanent: why it failed */
	const char *detail;	/* short text, sanitised and cut to
				   SPOOL_DETAIL_MAX; or NULL */
	int64_t delay_ms;	/* retry, release: eligible again after this
				   long; 0: at once; -1: the spool's backoff
				   (retry) or at once (release).  Unused by
				   ok and permanent */
	/* out */
	struct spool_result res;
};

/*
 * End a delivery with one of the outcomes of spool(7), "Outcomes".  An ID
 * named twice in one call is handled twice in order, as two calls would.
 * A stale token is refused and changes nothing.  Repeating a finish that
 * this token already made with the same outcome succeeds and changes
 * nothing.  A retry whose attempts are spent parks as exhausted, one whose
 * next eligible time would reach the deadline parks as deadline, and class
 * unknown-side-effect always parks for reconciliation; res.state and
 * res.reason say which.  A retry of class crashed or timeout that parks is
 * flagged for reconciliation too.
 */
int spool_finish(struct spool *sp, struct spool_finish *f, size_t n);

/*
 * spool_finish(f, n), then spool_claim(opts, out, max, got), in one wait:
 * for a worker whose handlers ended and whose slots are free.  The finish
 * moves its jobs and keeps them locked; the claim runs; one wait covers
 * both, and nothing is reported before it.  A job this call names is not
 * claimed by it, even one retried at once; the slot a finished job held
 * under its key's limit is free to the claim.  f[i].res reports each
 * finish as spool_finish would, whatever the call returns; the return
 * value, *got and out are the claim's, as spool_claim's; -1 with every
 * finish failed, and nothing done, if n is above SPOOL_BATCH_MAX, max is 0
 * or above it, or opts is not valid (EINVAL); -1, and no claim made, if
 * the finish failed before its wait.
 */
int spool_finish_claim(struct spool *sp, struct spool_finish *f, size_t n,
    const struct spool_claim_opts *opts, struct spool_lease *out,
    size_t max, size_t *got);

/* Operator actions. */
struct spool_operator {
	const char *by;		/* who: a name, spool_valid_note() */
	const char *note;	/* why: a ticket or a few words,
				   spool_valid_note() */
	int reconciled;		/* the operator checked the side effect */
	int edited;		/* redrive: send the payload as it is now, even
				   if it was changed by hand since it was
				   enqueued (its new size and checksum are
				   recorded) */
};

struct spool_item {
	const char *id;
	int64_t before;		/* 0, or act only if the job has been in its
				   state since before this time (ms): what a
				   selection saw has not changed since */
	struct spool_result res;
};

/*
 * Put parked jobs back in new/, unchanged, eligible at once: attempts reset,
 * a fresh deadline, one more cycle, token kept.  Refused unless the job is in
 * dead/ now (SPOOL_NO_NOT_PARKED), for a job flagged as possibly having
 * had its side effect unless op->reconciled (SPOOL_NO_UNRECONCILED), and
 * for a job whose payload is not the bytes its record's size and checksum
 * describe unless op->edited (SPOOL_NO_EDITED).  The payload is read
 * whole to be checked; one whose record has no checksum (enqueued by an
 * earlier version) gets one.
 */
int spool_redrive(struct spool *sp, const struct spool_operator *op,
    struct spool_item *items, size_t n);

/*
 * End parked jobs without running them: each moves from dead/ to done/ with
 * its payload and record, marked dropped.  SPOOL_NO_NOT_PARKED otherwise.
 */
int spool_drop(struct spool *sp, const struct spool_operator *op,
    struct spool_item *items, size_t n);

/*
 * Stop jobs that have not finished: a queued or leased job parks at once
 * (reason cancelled, class cancelled) and is not delivered; a leased one's
 * holder can no longer finish or renew it, and since it may have begun the
 * work, it is flagged for reconciliation.  SPOOL_NO_NOT_QUEUED otherwise.
 */
int spool_cancel(struct spool *sp, const struct spool_operator *op,
    struct spool_item *items, size_t n);

/*
 * Remove finished jobs (from SPOOL_DONE, op may be NULL) or, only with an
 * operator, parked ones (from SPOOL_DEAD): the payload goes, then, once
 * the purge is logged, the sidecar (format 2; format 1 keeps it, ending in
 * a purge record).  The token counter keeps a later job of the same ID
 * from reusing a token.  An ID in another state is refused
 * (SPOOL_NO_NOT_DONE, SPOOL_NO_NOT_PARKED).  from SPOOL_ABSENT, with an
 * operator, records the removal of jobs whose file a person removed by
 * hand (spool(7), EDITING THE SPOOL BY HAND): their file must be where
 * none of their last two records put it (SPOOL_NO_NOT_MISSING otherwise),
 * and they are purged as if it had been there.
 */
int spool_purge(struct spool *sp, const struct spool_operator *op,
    enum spool_state from, struct spool_item *items, size_t n);

/*
 * Files an interrupted enqueue left in tmp/, older than age_ms, are
 * removed; *n says how many.  Nothing reads tmp/, so none is a job.
 */
int spool_sweep_tmp(struct spool *sp, int64_t age_ms, size_t *n);

/*
 * Pause (on) or resume claims: producers go on, claims find nothing.  The
 * pause is the file "paused" in the spool; op may be NULL.
 * spool_paused: 1 paused, 0 not, -1 error.
 */
int spool_pause(struct spool *sp, const struct spool_operator *op, int on);
int spool_paused(struct spool *sp);

/*
 * The audit log (spool-layout.md, "The audit log"): one line per
 * transition, eleven space-separated fields.  The events are those of the
 * sidecar's records (spool-layout.md, "The sidecar") and a few of the log's
 * own; SPOOL_EV_VOID in the log says that the line with its time, ID and
 * token (its event in note) is of a transition that did not happen.
 */
enum spool_event {
	SPOOL_EV_NONE,
	SPOOL_EV_ENQUEUE, SPOOL_EV_CLAIM, SPOOL_EV_RENEW, SPOOL_EV_OK,
	SPOOL_EV_RETRY, SPOOL_EV_RELEASE, SPOOL_EV_PARK, SPOOL_EV_REDRIVE,
	SPOOL_EV_VOID, SPOOL_EV_DROP, SPOOL_EV_CANCEL, SPOOL_EV_PURGE,
	SPOOL_EV_RECLAIM,	/* a claim that took over an expired lease */
	SPOOL_EV_SUPERSEDE,	/* a done file removed by a new cycle */
	SPOOL_EV_PAUSE, SPOOL_EV_RESUME,
	SPOOL_EV_RESTORE,	/* spool-fsck --restored marked the job */
	SPOOL_EV_REBUILD	/* spool-fsck --repair made a lost sidecar again */
};

/* One audit line, parsed.  A "-" in the line is "" (or 0) here. */
struct spool_audit {
	int64_t time;		/* ms since the epoch */
	enum spool_event event;
	char id[SPOOL_ID_MAX + 1];	/* "" for pause and resume */
	uint64_t token;		/* the job's token after the event */
	int attempt, cycle;
	char actor[SPOOL_ID_MAX + 1];	/* operator, or lease holder;
					   decoded (the line has it
					   percent-encoded) */
	int reason, class;	/* enum spool_reason, enum spool_class */
	char note[SPOOL_ID_MAX + 1];	/* the operator's note, decoded as
					   actor is; for a claim or
					   reclaim, the token it
					   superseded */
	char writer[SPOOL_HOST_MAX + 24];	/* HOST:PID */
};

/*
 * Parse one line (without its newline).  0, or -1 with EINVAL when it is
 * not an audit line of this format: a reader skips such a line, since
 * anyone with write access may have put it there.
 */
int spool_audit_parse(const char *line, size_t len, struct spool_audit *a);

/*
 * Call fn(arg, line, len) for each complete line of every audit file
 * (rotated ones too), in no set order; lines end before their newline and
 * are not checked (spool_audit_parse does that).  fn returns 0 to go on.
 */
int spool_audit_scan(struct spool *sp,
    int (*fn)(void *arg, const char *line, size_t len), void *arg);

/* 1 for the events an operator causes: redrive ... purge, pause, resume. */
int spool_event_by_operator(int event);

/*
 * Times as the audit log writes them, UTC with milliseconds:
 * 2026-11-30T08:12:16.301Z.  spool_format_time returns the length written,
 * or 0 if the time cannot be written (it is negative, or buf is too
 * small: 25 bytes always do for a year of four digits).
 * spool_parse_time: 0, or -1 if s is not such a time.
 */
size_t spool_format_time(char *buf, size_t size, int64_t ms);
int spool_parse_time(const char *s, size_t len, int64_t *ms);

/* Inspection: what an operator reads before deciding. */
struct spool_delivery {
	int cycle, attempt;
	uint64_t token;
	char owner[SPOOL_ID_MAX + 1];
	int64_t claimed;	/* ms since the epoch */
	int64_t ended;		/* 0: still under its lease */
	const char *end;	/* "ok", "retry", "permanent", "release",
				   "expired" (lease ran out), "parked" (by
				   a claim: deadline or attempts),
				   "cancelled" (by an operator), or NULL */
	int class;
	char detail[SPOOL_DETAIL_MAX + 1];
};

struct spool_job_info {
	char id[SPOOL_ID_MAX + 1];
	enum spool_state state;
	char file[SPOOL_ID_MAX + 24];	/* its file's name in the state's
					   directory: ID, or ID,NUMBER */
	int64_t since;		/* when it entered this state (a renew
				   does not change it) */
	int64_t created, deadline, eligible, lease_until;
	char trace[SPOOL_ID_MAX + 1];
	char key[SPOOL_KEY_MAX + 1];	/* "": none */
	char owner[SPOOL_ID_MAX + 1];	/* the lease holder, when leased */
	uint64_t token;		/* highest token ever issued */
	int attempts, max_attempts, cycles;
	int reason, class;	/* why it parked, or how it last failed */
	char detail[SPOOL_DETAIL_MAX + 1];
	int side_effect;	/* may have happened: reconcile first */
	int redriven;		/* this cycle began with a redrive */
	int dropped;		/* in done/ by a drop, not by running */
	char by[SPOOL_ID_MAX + 1], note[SPOOL_ID_MAX + 1];
	int64_t acted;		/* the last operator action on it (by, note) */
	uint64_t payload_size;	/* the payload's bytes and XXH3-64 checksum, */
	uint64_t payload_xxh3;	/* as recorded; 0 if the record has none */
	int payload_resized;	/* the file's size is not the recorded one:
				   edited by hand, or torn */
	struct spool_delivery *deliveries;	/* every cycle's, in order */
	size_t ndeliveries;
	enum spool_damage {	/* with EUCLEAN from spool_job_info */
		SPOOL_DAMAGE_NONE,
		SPOOL_DAMAGE_MISSING,	/* the file is not where the last
					   record says, nor the one before */
		SPOOL_DAMAGE_UNREADABLE,	/* a hand took its mode away */
		SPOOL_DAMAGE_SIDECAR	/* a record cannot be read */
	} damage;
};

/*
 * Read what the sidecar knows of id, under a shared lock, changing
 * nothing.  history: also fill deliveries (free them with
 * spool_job_info_free).  ENOENT: no such job.  EUCLEAN: damaged; info
 * then holds what the sidecar says, its last record taken as done, and
 * damage says what is wrong (free it all the same).  The
 * sidecar is read twice (state, then history): it is small.
 */
int spool_job_info(struct spool *sp, const char *id, int history,
    struct spool_job_info *info);
void spool_job_info_free(struct spool_job_info *info);

/*
 * Is the payload of id the bytes its record describes?  1 if it is (or if
 * the record, written by an earlier version, has no checksum), 0 if not;
 * -1 with errno (ENOENT: no such job; EUCLEAN: damaged).  full: read it
 * whole and check its checksum; else its size only.
 */
int spool_payload_check(struct spool *sp, const char *id, int full);

/*
 * What settles a job in state whose payload is not what its record says,
 * in the words spool-fsck prints: "check it, then spool-redrive --edited
 * or spool-drop" for a parked job.
 */
const char *spool_payload_advice(enum spool_state state);

/*
 * Call fn(arg, id, file) for each job's file in state (file: its name),
 * in no set order; a job moving meanwhile may be seen twice or not at all,
 * and a crash may leave a second file of a job until the next command on
 * it: the file that spool_job_info() names is the job's.  fn returns 0 to
 * go on, anything else to stop (and spool_list returns it).  state
 * SPOOL_ABSENT lists instead every ID that has a sidecar (file: its name
 * in meta/), whatever its state: a job whose file is nowhere too.
 */
int spool_list(struct spool *sp, enum spool_state state,
    int (*fn)(void *arg, const char *id, const char *file), void *arg);

/*
 * The same, with what spool_job_info(id, history) says of each job: fn
 * gets info, or NULL with errno as spool_job_info sets it (ENOENT, EUCLEAN,
 * or another failure).  A job whose file is not where its last record
 * says, or may not be read, comes with info, info->damage set, where its
 * file was seen: a hand moved it there.  So do files a hand put at the top
 * of new/.  Not for SPOOL_ABSENT, which sees no file.  For a job whose
 * file is where its last record says, the sidecar is read once, without a
 * lock (spool-layout.md, "Readers"):
 * what a listing shows may be a moment old, never half of a transition.
 * info is valid during the call only.
 */
int spool_list_jobs(struct spool *sp, enum spool_state state, int history,
    int (*fn)(void *arg, const char *id, const char *file,
    const struct spool_job_info *info), void *arg);

/*
 * What a look at every job by its sidecar cannot see, counted, not judged
 * (spool-fsck says what each is): files of a job whose sidecar is gone
 * or emptied, in any state; files at the top of new/, where only buckets
 * belong, that no sidecar names; and files in quarantine/, which
 * spool-fsck --repair put there for a person to look at.  seen[state],
 * if not NULL, is how many jobs a walk of spool_list_jobs(SPOOL_ABSENT)
 * found in each state (SPOOL_NEW to SPOOL_DEAD): a state that holds that
 * many files is not listed again.  0, or -1 with errno.
 */
struct spool_census {
	long orphans;		/* job files whose sidecar is gone */
	long loose;		/* files at new/'s top that no sidecar names */
	long quarantined;	/* files in quarantine/ */
};
int spool_census(struct spool *sp, const long *seen,
    struct spool_census *c);

/*
 * Check every invariant of spool-layout.md; say(arg, what, problem, said)
 * is called once per violation (what: a job ID or a path; said:
 * SPOOL_SAID_FAULT, or SPOOL_SAID_FIXED if repaired), and with
 * SPOOL_SAID_NOTE for what is no violation but worth a look (a name in
 * the top directory that is not a spool's).  flags:
 * SPOOL_FSCK_REPAIR completes or rolls back what crashes interrupted,
 * appends the missing audit lines, moves files no job owns to quarantine/
 * (never deletes a payload).  SPOOL_FSCK_RESTORED (with repair) is for a
 * spool brought back from a backup or a snapshot (spool(7), BACKUPS): the
 * token counter jumps past every token handed out since the backup, and
 * each leased or parked job is marked for a person to reconcile; EPROTO
 * on a spool of format 1.  Every payload's size is checked against its
 * record; SPOOL_FSCK_VERIFY reads every payload and checks its checksum
 * too.  Returns 0 if the spool is consistent (after repair), 1 if not, -1
 * if it could not be checked.
 */
#define SPOOL_FSCK_REPAIR	1	/* flags: bits */
#define SPOOL_FSCK_RESTORED	2
#define SPOOL_FSCK_VERIFY	4
enum spool_said {		/* say()'s last argument: one value */
	SPOOL_SAID_FAULT,	/* a violation, left as it is */
	SPOOL_SAID_FIXED,	/* a violation, repaired */
	SPOOL_SAID_NOTE		/* not a fault: worth a look */
};
#define SPOOL_FSCK_NOTE	SPOOL_SAID_NOTE	/* its first name, kept */
int spool_fsck(struct spool *sp, int flags,
    void (*say)(void *arg, const char *what, const char *problem, int said),
    void *arg);

/*
 * How a long run goes, for a progress display: spool_fsck() calls fn now
 * and then with what it counts ("files" read, then "jobs" checked), how
 * many so far, and of how many (0 while not known).  fn NULL: not told.
 */
void spool_set_progress(struct spool *sp, void (*fn)(void *arg,
    const char *what, size_t done, size_t total), void *arg);

/* Validation and parsing, shared by every command (return 1 if valid). */
int spool_valid_id(const char *s);	/* [A-Za-z0-9._-], first alnum, <=128 */
int spool_valid_key(const char *s);	/* as an ID, <=64 bytes */
int spool_valid_owner(const char *s);	/* also ':' and '@': host:pid */
/*
 * Who acts and why (--by, --note): printable UTF-8 text, 1 to 128 bytes.
 * Spaces are allowed ("Jane Doe", "upstream fixed").  Refused: a control
 * character (C0, DEL, C1), malformed or overlong UTF-8, a surrogate, a
 * code point above U+10FFFF, and "-" alone (the audit log's empty field).
 */
int spool_valid_note(const char *s);

/* "500ms", "30s", "5m", "2h", "7d"; a bare number is seconds.  0 or -1. */
int spool_parse_duration(const char *s, int64_t *ms);
/* "64M", "2G", "500k" or a number of bytes.  0 or -1. */
int spool_parse_size(const char *s, uint64_t *bytes);
/* A decimal token, 1 .. SPOOL_TOKEN_MAX.  0 or -1. */
int spool_parse_token(const char *s, uint64_t *token);
/* Names as the commands and files spell them; -1 if unknown. */
int spool_outcome_from_name(const char *s);
int spool_class_from_name(const char *s);
int spool_reason_from_name(const char *s);
const char *spool_outcome_name(int outcome);
const char *spool_class_name(int class);
const char *spool_reason_name(int reason);
const char *spool_state_name(int state);	/* "new", "done", ... */
const char *spool_refusal_name(int refusal);	/* a short phrase */
const char *spool_event_name(int event);	/* "enqueue", "reclaim" ... */
int spool_event_from_name(const char *s);

/* The spool's clock, ms since the epoch. */
int64_t spool_now(void);

/* Counters of the system calls that cost: for benchmarks and tests. */
struct spool_counters {
	unsigned long fsyncs;	/* fsync + fdatasync */
	unsigned long renames;
};
void spool_get_counters(struct spool_counters *c);

#endif
