/*
 * Private to libspool: the handle, the sidecar record model and the helpers
 * every operation shares.  Nothing here is exported; see spool.h for the
 * contract and spool-layout.md for the format these functions implement.
 *
 * The files of lib/ come in layers.  Each file calls only the files listed
 * before it, here and in the sections below, in this order (make
 * check-layers checks the objects against it):
 *
 *   base    hooks.c    the clock, and the test build's hooks
 *           room.c     the space and inodes the spool keeps for draining,
 *                      and what is free
 *           io.c       system calls as the spool needs them; the move
 *           sync.c     the syncs of one wait, side by side
 *           valid.c    IDs, notes, the names of states, reasons and
 *                      classes, and the percent-encoding of free text
 *           errors.c   each errno's meaning and exit status
 *   store   record.c   the sidecar record: one line to a struct and back
 *           audit.c    the audit line: its writer, its parser, its scan
 *           tokens.c   the spool-wide token counter
 *           payload.c  a payload's size and checksum
 *           names.c    the names of a job's file in each state
 *           newtree.c  new/'s bucket tree, and the one cache of its leaves
 *           place.c    where a job's file is, on disk
 *           sidecar.c  a job: locked, read, settled, recorded and moved
 *           commit.c   a transition's one wait
 *   spool   limits.c   config's limits and rates, and the slots of a claim
 *           hosts.c    several hosts: the file-system check, this host's
 *                      ID and its entry in hosts/
 *           open.c     a handle: directories, config and its limits as
 *                      they are now
 *           init.c     spool_init, and the upgrade from format 1
 *   moves   batch.c    named jobs: lock in ID order, one wait for all
 *           pause.c    pause and resume
 *           enqueue.c claim.c finish.c renew.c redrive.c drop.c
 *           cancel.c purge.c     one file per transition
 *   read    info.c     one job, for people
 *           list.c     every job of a state, and the census
 *   check   fsck_audit.c   spool-fsck's audit index and its checks
 *           fsck_repair.c  its repairs: put back, adopt, rebuild
 *           fsck.c         its walk, and spool_fsck
 */
#ifndef SPOOL_INTERNAL_H
#define SPOOL_INTERNAL_H

#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <stdint.h>

#include "spool.h"

/* Eligible times are grouped in slots of 16 ms, 4096 slots a directory. */
#define SLOT_SHIFT	4

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Longest name the spool builds under its top directory. */
#define NAME_MAX_SPOOL	256
#define HOST_MAX	SPOOL_HOST_MAX

/* config's limit.KEY=N and rate.KEY=N/DUR (limits.c) */
#define LIMITS_MAX	64	/* keys with a limit or a rate */
#define LIMIT_MAX	1000000	/* the largest N of either */

struct spool {
	int format;		/* 1 or 2: spool-layout.md, "Formats" */
	int dirfd;		/* the spool's top directory */
	int tokfd;		/* the tokens file, once a claim needs it */
	int tokens_unsynced;	/* tokens.c: last written, not yet synced */
	int tmpfd, newfd, leasedfd, donefd, deadfd, metafd, auditfd;
	char *path;		/* absolute path of the top directory */
	int group;		/* shared by a group: setgid, group-writable */
	int64_t lease_ms, deadline_ms, backoff_ms, backoff_max_ms;
	int64_t timeout_ms;	/* config timeout: spool-run's; 0: none */
	int max_attempts;
	uint64_t reserve_bytes, reserve_inodes;	/* kept free for draining */
	int multi_host;		/* config multi-host=yes */
	int syncfs;		/* config syncfs=yes: a big wait is one syncfs */
	int64_t skew_ms;	/* clock-skew allowance before a takeover */
	struct spool_limit limits[LIMITS_MAX];
	int nlimits;
	struct stat config_st;	/* config as last read: a claim reads it
				   again when it changed (limits) */
	int64_t lock_wait_ms;	/* io.c: a lock's longest wait; -1: for ever */
	int64_t tokens_gave_up;	/* tokens.c: when a wait for the counter's
				   lock ran out (monotonic ms); -1: none */
	char host[HOST_MAX + 1];	/* names this writer's audit file */
	char writer[HOST_MAX + 24];	/* host:pid, the audit writer column */
	void *ring;		/* sync.c: psync's io_uring, made at its third
				   wait */
	pid_t ring_pid;		/* whose ring it is; -1: none to be had */
	unsigned waits;		/* sync.c: waits of more than one sync so far */
	unsigned long tmpseq;
	struct buckets {	/* newtree.c: the leaves kept open */
		int held;	/* calls holding; 0: nothing is kept */
		size_t n;	/* entries: 0, NARROW, or up to WIDE */
		unsigned long use;
		struct bucket {
			uint64_t slot;
			int fd;	/* -1: free */
			unsigned long used;
			int known;	/* dev and ino are fd's */
			dev_t dev;
			ino_t ino;
		} *e;
	} buckets;
	/* spool_set_progress(): told how a long run goes */
	void (*progress)(void *arg, const char *what, size_t done,
	    size_t total);
	void *progress_arg;
};

/*
 * One sidecar record: the event and the job's whole state after it, so the
 * state of a job is its last effective record.
 */
struct rec {
	int64_t t;
	int ev;			/* enum spool_event */
	int loc;		/* enum spool_state after the event */
	int64_t eligible;	/* loc new: eligible time */
	uint64_t tok;		/* current token; loc leased: the lease's */
	int att, cyc, max;
	int64_t deadline, ttl, created;
	char trace[SPOOL_ID_MAX + 1];
	char key[SPOOL_KEY_MAX + 1];	/* "": none */
	char owner[SPOOL_ID_MAX + 1];
	int64_t until;		/* loc leased: lease expiry */
	int out;		/* finish records: enum spool_outcome */
	int cls, reason, se;
	char detail[SPOOL_DETAIL_MAX + 1];
	char by[SPOOL_ID_MAX + 1], note[SPOOL_ID_MAX + 1];
	uint64_t prev;		/* reclaim: the token it superseded */
	uint64_t size, sum;	/* the payload's bytes and XXH3-64; sum 0:
				   not known (an older record) */
};

/*
 * The longest record rec_format writes, with its newline and a NUL: trace
 * and owner of 128 bytes, key of 64; by, note and detail at their longest
 * with every byte encoded as three; every number at its widest.  Keys,
 * numbers, names, the newline and the NUL take 412 bytes at most.  A void record,
 * which may come before it in one append, takes 56 with its newline.
 */
#define REC_LINE_MAX	(2 * SPOOL_ID_MAX + SPOOL_KEY_MAX + \
	3 * (2 * SPOOL_ID_MAX + SPOOL_DETAIL_MAX) + 412)
#define REC_VOID_MAX	56

/* A job opened for change: its sidecar locked and folded. */
struct job {
	char id[SPOOL_ID_MAX + 1];
	int fd;			/* sidecar, flock'd */
	int created;		/* we created the sidecar */
	struct rec cur;		/* state after the last effective record */
	struct rec prev;	/* state before it */
	uint64_t hi;		/* highest token ever issued */
	int voidtail;		/* last record did not take effect */
	int cur_synced;		/* the caller made cur's place durable */
	size_t valid, size;	/* sidecar bytes: complete lines, all */
	char *text;		/* the sidecar as read */
	size_t textlen;
	char *finishes;		/* "tok out\n" of every finish, for repeats */
	size_t nfinishes;
	int finish_last;	/* the last record was a finish */
	int lastvoid;		/* the last complete line is a void record */
	int settled;		/* what job_settle removed: SETTLED_* */
	dev_t dev;		/* the job file, once located */
	ino_t ino;
	mode_t fmode;	/* its mode: none may read it after a chmod 000 */
	off_t fsize;	/* its size, as the file is now */
	size_t npending, written;	/* queued; written, not yet synced */
	int event;		/* the audit event of the queued record */
	char pending[REC_VOID_MAX + REC_LINE_MAX];	/* lines to append
				   on commit, a void record and a record:
				   last, and not zeroed (see job_clear) */
};

/* Audit lines of one call, written in one write after its renames. */
struct abuf {
	char *p;
	size_t len, size;
};

/* hooks.c: the clock, and the test build's hooks (tests/README.md) */
int64_t now_ms(void);
void crash_point(const char *name);
long hook_skip_sync(void);
int hook_no_uring(void);
int hook_ring_tested(void);
int hook_ring_result(int res);
long hook_syncfs_min(void);
int hook_no_noreplace(void);
const char *hook_mountinfo(void);
int64_t hook_lock_wait(void);
int hook_clock(void);
const char *hook_boot_id(void);
int hook_enomem(const char *name);

/*
 * room.c: the reserve the spool keeps for draining (spool-layout.md, "The
 * reserve").  DRAINING(sp) opens an operation that may draw on it: until
 * the function returns, io.c's calls that find the file system full take
 * some back and try again.
 */
struct spool *room_enter(struct spool *sp);
void room_leave(struct spool **prev);
#define DRAINING(sp)	struct spool *room_prev_ \
			    __attribute__((cleanup(room_leave))) = room_enter(sp)
int room_give(void);
int room_held(struct spool *sp, struct spool_room *r);
int room_below(struct spool *sp, struct spool_room *r);
void room_fill(struct spool *sp);

/*
 * io.c: system calls as the spool needs them (EINTR retried, short writes
 * completed), listings, bounded locks, modes, the no-replace move
 */
extern struct spool_counters counters;
ssize_t read_full(int fd, void *buf, size_t n);
int read_small(int dirfd, const char *name, char *buf, size_t size);
int write_all(int fd, const void *buf, size_t n);
int write_at(int fd, const void *buf, size_t n, off_t off);
int close_fd(int fd);
int sys_openat(int dirfd, const char *path, int flags, mode_t mode);
ssize_t sys_pread(int fd, void *buf, size_t n, off_t off);
int sys_ftruncate(int fd, off_t len);
int sys_renameat(int fromfd, const char *from, int tofd, const char *to,
    unsigned flags);
int sys_unlinkat(int dirfd, const char *path, int flags);
int sys_mkdirat(int dirfd, const char *path, mode_t mode);
int sys_flock(const struct spool *sp, int fd, int op);
int lock_fd(const struct spool *sp, int fd, int nonblock);
int move_noreplace(int fromfd, const char *from, int tofd, const char *to);
int mkdir_mode(struct spool *sp, int dirfd, const char *rel);
int file_mode(struct spool *sp, int fd, mode_t mode);
void sort_by_id(size_t *order, size_t n, const char **ids);
struct dlist *dir_list(int dirfd);
struct dlist *dir_adopt(int fd);
struct dirent *dir_next(struct dlist *d);
void dir_close(struct dlist *d);

/*
 * sync.c: the syncs of a wait, the directories a call must sync, and a
 * small file of the top directory written durably
 */
struct dirset {
	char **names;		/* relative to the spool's top directory */
	size_t n;
};
int sync_fd(int fd);
int psync(struct spool *sp, const int *fds, size_t n, size_t ndirs,
    int *errs);
void ring_free(struct spool *sp);
int sync_dir(int dirfd, const char *rel);
int dirset_has(const struct dirset *ds, const char *rel);
int dirset_add(struct dirset *ds, const char *rel);
int dirset_sync(struct spool *sp, struct dirset *ds);
void dirset_free(struct dirset *ds);
int write_top_file(struct spool *sp, const char *name, const char *text,
    int replace);

/*
 * valid.c: the names of states and reasons as the sidecar spells them,
 * and the one percent-encoding of free text, shared by the sidecar and
 * the audit log (spool-layout.md, "The sidecar")
 */
int state_from_name(const char *s, size_t len);
int reason_from_name(const char *s);
#define PCT_SIZE(n)	(3 * (n) + 1)	/* n bytes encoded, and a NUL */
int pct_encode(char *dst, size_t size, const char *src);
int pct_decode(const char *s, size_t len, char *dst, size_t size);

/* record.c: the sidecar record, one line to a struct rec and back */
int rec_parse(const char *line, size_t len, struct rec *r);
size_t rec_format(char *buf, size_t len, const struct rec *r);
int rec_same_place(const struct rec *a, const struct rec *b);
int dec18(const char *s, size_t len, int64_t *v);

/*
 * The longest audit line, its newline and a NUL included: an ID of 128
 * bytes, ACTOR and NOTE of 128 bytes with every byte encoded as three,
 * WRITER at its longest, and 122 bytes for the other fields at their
 * widest and the spaces.
 */
#define AUDIT_LINE_MAX	(SPOOL_ID_MAX + 2 * 3 * SPOOL_ID_MAX + \
	SPOOL_HOST_MAX + 23 + 122)

/* audit.c: the audit line's one writer (its parser is spool.h's) */
int audit_add(struct abuf *ab, struct spool *sp, const char *id,
    const struct rec *r, int event);
size_t audit_format(char *buf, size_t size, const struct spool_audit *a);
int audit_void(struct abuf *ab, struct spool *sp, const struct spool_audit *a);
int audit_write(struct spool *sp, struct abuf *ab, int *fdp, int *created);
int audit_done(struct spool *sp, struct abuf *ab, int fd, int created);
int audit_flush(struct spool *sp, struct abuf *ab);
void abuf_free(struct abuf *ab);

/*
 * spool_audit_scan, resumable: with m, each file (by device and inode) is
 * read from where the last scan with m left it, so that a second scan
 * calls fn only for the lines appended since, unless the bytes before that
 * point changed (a copy-and-truncate rotation, an inode number used
 * again): then from its start, calling fn again for lines it had.  m
 * starts zeroed.
 */
#define AUDIT_MARK_TAIL	32
struct audit_mark {
	struct audit_mark_file {
		dev_t dev;
		ino_t ino;
		off_t off;		/* after the last whole line read */
		struct timespec ctim;	/* its change time then */
		size_t ntail;
		char tail[AUDIT_MARK_TAIL];	/* the bytes before off */
	} *files;
	size_t n, cap;
};
int audit_scan(struct spool *sp, struct audit_mark *m,
    int (*fn)(void *arg, const char *line, size_t len), void *arg);
void audit_mark_free(struct audit_mark *m);

/* tokens.c: the spool-wide token counter (format 2) */
struct tokens {
	uint64_t next;		/* every token handed out is below it */
	uint64_t last;		/* the last token taken, if boot is ours */
	char boot[64];		/* the boot ID of the machine that took it */
	uint64_t from;		/* tokens below it were counted per ID, in
				   format 1; 0 if never */
};
int tokens_parse(const char *text, size_t len, struct tokens *c);
int tokens_text(char *buf, size_t size, uint64_t next, uint64_t from);
int token_take(struct spool *sp, const uint64_t *hi, size_t n,
    uint64_t *tok);
int tokens_raise(struct spool *sp, uint64_t floor);
int tokens_remake(struct spool *sp, uint64_t floor);
int tokens_distrust(struct spool *sp);

/* payload.c: a payload's size and checksum */
int payload_copy(int from, int to, uint64_t *size, uint64_t *sum);
int payload_sum(int fd, uint64_t *size, uint64_t *sum);
int payload_sum_at(int dirfd, const char *name, uint64_t *size,
    uint64_t *sum);
int payload_matches(int fd, const struct rec *r, int full);

/* names.c: the names of a job's file, made and parsed */
int bucket_rel(char *buf, size_t len, int64_t eligible);
int64_t bucket_start(uint64_t top, unsigned mid, unsigned leaf);
int leaf_name(char *buf, size_t len, const char *id, int64_t eligible);
int parse_new_name(const char *name, char *id, int64_t *eligible);
int parse_leased_name(const char *name, char *id, uint64_t *token);
int place_name(char *buf, size_t len, const char *id, const struct rec *r);

/* newtree.c: new/'s buckets, opened, kept, filled and walked */
int open_bucket(struct spool *sp, int64_t eligible, int create);
void buckets_hold(struct spool *sp);
void buckets_drop(struct spool *sp);
void buckets_widen(struct spool *sp);
void buckets_free(struct spool *sp);
int leaf_fd(struct spool *sp, int64_t eligible, int create, int *owned);
int leaf_stale(struct spool *sp, int fd);
int leaf_current(struct spool *sp, int64_t eligible, int fd);
void leaf_seed(struct spool *sp, int64_t start, int fd);
int publish_new(struct spool *sp, int fromfd, const char *from,
    const char *id, int64_t eligible, struct dirset *ds);
int bucket_walk(struct spool *sp, int64_t until, int64_t prune_now,
    int (*leaf)(void *arg, int leaffd, int64_t start), void *arg);
int bucket_walk_all(struct spool *sp,
    int (*leaf)(void *arg, int leaffd, int64_t start),
    int (*stray)(void *arg, const char *dir, const char *name), void *arg);

/* place.c: where a job's file is, on disk */
struct stat;
struct place {
	int dirfd;
	int close;		/* dirfd is ours to close */
	int kept;		/* dirfd is a leaf sp->buckets keeps open */
	char name[NAME_MAX_SPOOL];
};
int place_of(struct spool *sp, const char *id, const struct rec *r,
    struct place *p);
int place_again(struct spool *sp, const char *id, const struct rec *r,
    struct place *p);
void place_done(struct place *p);
int place_stat(struct spool *sp, const char *id, const struct rec *r,
    struct stat *st);
int sync_place(struct spool *sp, const struct rec *r);

/* sidecar.c: a job's sidecar, opened, locked, read, settled, appended to */
int job_open(struct spool *sp, const char *id, int create, int nonblock,
    struct job *j, struct abuf *ab);
void job_close(struct job *j);
int job_peek(struct spool *sp, const char *id, struct job *j);
int job_read(struct spool *sp, const char *id, int lock, struct job *j);
int job_locate(struct spool *sp, struct job *j);
int fold_records(struct job *j, const char *buf, size_t len);
int job_settle(struct spool *sp, struct job *j, struct abuf *ab);
#define SETTLED_NAME	1	/* a second name of the job's file */
#define SETTLED_CYCLE	2	/* the previous cycle's file in done/ */
int job_record(struct job *j, const struct rec *r);
int job_write(struct job *j);
int job_commit(struct job *j);
int job_move(struct spool *sp, struct job *j, struct dirset *ds);
int job_finished(const struct job *j, uint64_t tok, int out);
void rec_next(const struct job *j, struct rec *r, int ev, int64_t now);

/*
 * commit.c: a transition's one wait.  A carry is a wait handed on: what
 * a finish still has to sync when a claim runs before its wait, which the
 * claim's first commit takes up (spool_finish_claim).  Its audit lines
 * are written already, to logfd (-1: none), from ab.  taken says it was;
 * rv and err are then the finish's wait's outcome, errs its files'.
 */
struct carry {
	const int *files;
	size_t nfiles;
	int *errs;
	struct dirset *ds;
	struct abuf *ab;
	int logfd, created;
	int taken, rv, err;
};
int commit_sync(struct spool *sp, const int *files, size_t nfiles,
    int *errs, struct dirset *ds, struct abuf *ab);
int commit_with(struct spool *sp, const int *files, size_t nfiles,
    int *errs, struct dirset *ds, struct abuf *ab, struct carry *cy);

/* limits.c: config's limits and rates, and the slots a claim takes */
int limit_line(struct spool *sp, const char *name, const char *val,
    const char **form);
const struct spool_limit *limit_of(const struct spool *sp,
    const char *key);
int slot_take(struct spool *sp, const struct job *j, int64_t now,
    int64_t until, int nonblock, struct dirset *ds);

/* hosts.c: several hosts: the file-system check, the host ID, hosts/ */
int host_register(struct spool *sp);

/* open.c: a handle: its directories, config and config's limits */
#define NSUBDIRS	7
extern const char *const subdirs[NSUBDIRS];
int open_top(const char *dir);
int read_format(int dirfd);
void config_limits(struct spool *sp);

/* batch.c: lock in ID order, one transition each, one group commit */
struct batch {
	size_t n;
	/* item i's ID (NULL if the item is invalid) and result */
	const char *(*item)(struct batch *b, size_t i,
	    struct spool_result **res);
	int (*one)(struct spool *sp, struct job *j, size_t i, struct batch *b);
	void *arg;			/* the caller's items */
	const struct spool_operator *op;
	const void *extra;		/* what else one() needs */
	const char *name;		/* "finish": names the crash points */
	int onewait;			/* records synced with the moves: only
					   for moves out of new/ and leased/ */
	/* run before the first round's wait, which it takes up (a carry) */
	void (*then)(struct spool *sp, struct carry *cy, void *arg);
	void *then_arg;
	const size_t *only;		/* this round's items, ascending */
	size_t nonly;
	int64_t now;
	struct dirset ds;
	struct abuf ab;
};
int batch_run(struct spool *sp, struct batch *b);
int batch_items(struct spool *sp, const struct spool_operator *op,
    struct spool_item *items, size_t n, const char *name, int onewait,
    int (*one)(struct spool *sp, struct job *j, size_t i, struct batch *b),
    const void *extra);
void refuse(struct spool_result *res, int refusal, const struct job *j);
int changed_since(struct spool_item *it, const struct job *j);
void failed(struct spool_result *res, int err, int changed);

/* claim.c: a claim whose first wait is the carry's, if cy is not NULL */
int claim_with(struct spool *sp, const struct spool_claim_opts *opts,
    struct spool_lease *out, size_t max, size_t *n, struct carry *cy);

/* finish.c: the refusal a finish or renew with this token gets, if any */
int lease_refusal(const struct job *j, uint64_t token,
    struct spool_result *res);

/* redrive.c, drop.c: the records of a redrive and a drop */
void rec_redrive(const struct job *j, struct rec *r, int64_t now,
    const char *by, const char *note);
void rec_drop(const struct job *j, struct rec *r, int64_t now,
    const char *by, const char *note);

/* info.c: what a job read and located says of it */
int info_fill(struct spool *sp, struct job *j, int ev0, int history,
    struct spool_job_info *in);

/* list.c: the listings' lean look at a job (spool-layout.md, "Readers") */
int look_locked(struct spool *sp, const char *id, struct job *j);
int look_job(struct spool *sp, enum spool_state state,
    int dirfd, int64_t start, const char *id, const char *file, int history,
    struct spool_job_info *in);

#endif
