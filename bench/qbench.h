/*
 * What qbench's driver (qbench.c) and its back ends, a file a system,
 * share.  A back end owns its state behind struct sys's st and reaches
 * the command line only through opt, which the driver fills in before
 * any back end runs and nothing changes after.
 */
#ifndef QBENCH_H
#define QBENCH_H

#include <sys/types.h>

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#include "bench.h"

#define PAYLOAD_SIZE	100	/* bytes: a small job, as bench/README.md says */
#define BATCH		SPOOL_BATCH_MAX
#define CLI_CLAIM_N	100	/* spool-claim -n, spool-finish - lines */
#define OUT_MAX		65536
#define MANY_MAX	128	/* -m: the most processes a turn */
#define PROCS_MAX	8	/* -m: the most turns, a P each */

/* The command line. */
struct opts {
	const char *label;
	const char *workdir, *bindir;	/* -w, -b */
	const char *truebin, *truedyn;	/* -t, -D: the no-ops spawned */
	const char *spool;		/* -s: the spool of enq-*, not its own */
	const char *pg_conninfo;	/* -q */
	const char *python, *pyscript;	/* -y, -Y: lib-python's */
	const char *batchscript;	/* -B: batch-*'s client */
	const char *gocycle;		/* -G: go-cycle's client */
	const char *flush_dev;		/* -F */
	int bean_port;			/* -p */
	int cli_files;			/* -f: files of batch-cli-spool */
	int batch_files;		/* -n: files a step of floor-batch-* */
	long dirty_kib;			/* -u: another file's KiB a step */
	long cli_claims;		/* -c: jobs claimed a round (0: all) */
	int procs[PROCS_MAX], nprocs;	/* -m: the P of each turn */
	double slice;			/* -T: seconds a turn; 0: K cycles */
};

extern struct opts opt;
extern char payload[PAYLOAD_SIZE];	/* every job's bytes */
extern char payload_path[PATH_MAX];	/* a file holding them */
extern int devnull;

struct sys;
typedef void (*op_fn)(struct sys *, long);

/* A system: a row's column, taking its turn round after round. */
struct sys {
	const char *name;
	void (*init)(struct sys *);	/* once, before round 0 */
	op_fn op;			/* a turn: K cycles, or a set time */
	long unit;			/* cycles per step: K is a multiple */
	long k;				/* cycles a round */
	int files_step;			/* a step is -n files: unit follows */
	const char *key;		/* lib-spool-limit*, -rate: every job's */
	int procs;			/* P: workers of a turn, or jobs in flight */
	int round;
	int fixed;			/* named with =K: -T does not resize it */
	int counts;			/* this process's library did the work */
	char dir[PATH_MAX];
	double own_seconds;		/* >= 0: the op timed itself */
	long ran;			/* >= 0: the cycles done, not K */
	long own_fsyncs;		/* >= 0: the workers' fsyncs */
	struct pool *pool;		/* many-*: the workers of its turns */
	int slot;			/* many-*: which of the pool's turns */
	void *st;			/* the back end's own state */
};

/*
 * A system of many workers (row 10): P processes on one queue, each
 * looping over cycle.  prep makes the data of one P, in qbench, before
 * any worker is forked; a worker calls setup before its turns at that P
 * and teardown after them, when its next turn is at another P.
 */
struct many {
	const char *name;		/* many-NAME; its turn at P, many-NAME-pP */
	void (*prep)(struct sys *);
	void (*setup)(struct sys *);
	void (*cycle)(struct sys *);
	void (*teardown)(struct sys *);
	int counts;			/* the library counts its fsyncs */
};

/* A queue, or the floors under it: its systems, ended by a NULL name. */
struct backend {
	const char *name;
	struct sys *systems;
	const struct many *many;	/* NULL: none in row 10 */
};

extern const struct backend floor_backend, spool_backend, run_backend,
    sqlite_backend, beanstalkd_backend, pg_backend, nq_backend,
    python_backend, batch_backend;

#define SYS(N, I, O, U, K) { .name = N, .init = I, .op = O, .unit = U, .k = K }

/* The parts of a cycle, as phase() prints them. */
enum { P_ENQ, P_CLAIM, P_FIN };

/* qbench-os.c: files, processes, and the lines every system prints. */
void pathf(char *, size_t, const char *, ...)
    __attribute__((format(printf, 3, 4)));
void write_all(int, const void *, size_t);
void sync_or_die(int, int);
char *which(const char *);
char *cmd_path(const char *);
pid_t start(char *const [], char *const [], int, int);
int reap(pid_t);
void run_ok(char *const [], char *const [], int);
size_t run_read(char *const [], int, char *, size_t);
int stdin_of(const char *, size_t);
void sys_dir(struct sys *);
int open_dir(const char *, const char *);
void phase(struct sys *, const char *, long, double, long);
/*
 * A client: a program on pipes that does K jobs for each line "K" it reads
 * and then writes "K" back (bench/pycycle.py, bench/batchcycle.sh).
 */
struct client {
	FILE *to, *from;
};
struct client *client_start(char *const []);
void client_send(struct sys *, struct client *, long);
void client_wait(struct sys *, struct client *, long);
void client_ask(struct sys *, struct client *, long);

/* qbench-floor.c: the spawn floor, which spawn-16 and spawn-1 share. */
void spawn_init(struct sys *);

/* qbench-spool.c: a system's spool, made; with a library handle, and its
 * enqueue. */
void made_spool(struct sys *);
void lib_spool_init(struct sys *);
void lib_enqueue(struct sys *, size_t);
void lib_enqueue_k(struct sys *, long);
struct spool *sys_spool(struct sys *);
struct spool_lease *sys_leases(struct sys *);

/* qbench-beanstalkd.c: -P, wait until beanstalkd answers. */
void bean_probe(void);

/* qbench-many.c: row 10's turns. */
struct sys *many_sys(const struct many *, int);

#endif
