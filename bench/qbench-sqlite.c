/*
 * SQLite's systems: a queue in one table, through the sqlite3 shell (a
 * process a step), through the C API one job or a batch a transaction,
 * and in row 10 a connection a worker.  No system is less durable than
 * synchronous=FULL, and a claim takes its rows in BEGIN IMMEDIATE, so
 * that two claimers never lease one job.
 */
#define _GNU_SOURCE
#include <err.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "qbench.h"

struct sq {
	sqlite3 *db;
	sqlite3_stmt *ins;
	sqlite3_stmt *claim1;	/* one job: id = (SELECT ... LIMIT 1) */
	sqlite3_stmt *claimn;	/* a batch: id IN (SELECT ... LIMIT ?3) */
	sqlite3_stmt *fin;
	int fd;			/* the payload, read for each job */
};

/* A queue in one SQLite table, the same for the shell and for C. */
static const char schema[] =
    "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, "
    "payload BLOB NOT NULL, state TEXT NOT NULL, eligible INTEGER NOT NULL, "
    "token INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, "
    "lease_until INTEGER, owner TEXT);"
    "CREATE INDEX IF NOT EXISTS jobs_due ON jobs(state, eligible);";

/*
 * The claim of one job, "id = (SELECT ... LIMIT 1)", a scalar subquery,
 * and of a batch, "id IN (SELECT ... LIMIT ?3)", a list: each takes the
 * form a user would write for it.
 */
#define CLAIM_SET \
    "UPDATE jobs SET state='leased', token=token+1, attempts=attempts+1, " \
    "owner='bench', lease_until=?1 WHERE id "
#define CLAIM_DUE \
    "(SELECT id FROM jobs WHERE state='new' AND eligible<=?2 " \
    "ORDER BY eligible, id LIMIT "

static char *sqlite3_bin;

static long long
now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
db_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		errx(1, "sqlite: %s: %s", sql, msg != NULL ? msg : "?");
}

static struct sq *
db_open(struct sys *s, int wal)
{
	struct sq *q;
	char path[PATH_MAX];

	if ((q = calloc(1, sizeof(*q))) == NULL)
		err(1, "calloc");
	s->st = q;
	q->fd = -1;
	sys_dir(s);
	pathf(path, sizeof(path), "%s/queue.db", s->dir);
	if (sqlite3_open(path, &q->db) != SQLITE_OK)
		errx(1, "%s: %s", path, sqlite3_errmsg(q->db));
	db_exec(q->db, wal ? "PRAGMA journal_mode=WAL" :
	    "PRAGMA journal_mode=DELETE");
	db_exec(q->db, "PRAGMA synchronous=FULL");
	db_exec(q->db, schema);
	return q;
}

static void
db_close(struct sys *s)
{
	struct sq *q = s->st;

	(void)sqlite3_finalize(q->ins);
	(void)sqlite3_finalize(q->claim1);
	(void)sqlite3_finalize(q->claimn);
	(void)sqlite3_finalize(q->fin);
	if (sqlite3_close(q->db) != SQLITE_OK)
		errx(1, "sqlite3_close: %s", sqlite3_errmsg(q->db));
	if (q->fd != -1)
		(void)close(q->fd);
	free(q);
	s->st = NULL;
}

/* The sqlite3 shell: its database, made once (WAL mode is persistent). */
static void
cli_sqlite_init(struct sys *s, int wal)
{
	if (sqlite3_bin == NULL && (sqlite3_bin = which("sqlite3")) == NULL)
		errx(1, "%s: no sqlite3 in PATH", s->name);
	(void)db_open(s, wal);
	db_close(s);
	pathf(s->dir + strlen(s->dir), sizeof(s->dir) - strlen(s->dir),
	    "/queue.db");
}

static void
cli_sqlite_delete_init(struct sys *s)
{
	cli_sqlite_init(s, 0);
}

static void
cli_sqlite_wal_init(struct sys *s)
{
	cli_sqlite_init(s, 1);
}

/* Run sql in the shell on the system's database; its output into out. */
static void
shell(struct sys *s, const char *sql, char *out, size_t size)
{
	char *argv[] = { sqlite3_bin, "-batch", "-bail", s->dir, (char *)sql,
	    NULL };

	if (out == NULL)
		run_ok(argv, NULL, devnull);
	else
		(void)run_read(argv, devnull, out, size);
}

/*
 * The same cycle through the sqlite3 shell, one process each: an INSERT,
 * a claim by UPDATE ... RETURNING in one transaction, a finish by UPDATE
 * of that token.  synchronous=FULL is per connection, so each says it.
 */
static void
cli_sqlite_op(struct sys *s, long k)
{
	char sql[1024], out[256], *bar;
	long long now;
	long i;

	for (i = 0; i < k; i++) {
		now = now_ms();
		pathf(sql, sizeof(sql), "PRAGMA synchronous=FULL; "
		    "INSERT INTO jobs(payload, state, eligible) "
		    "VALUES(readfile('%s'), 'new', %lld);", payload_path, now);
		shell(s, sql, NULL, 0);
		now = now_ms();
		pathf(sql, sizeof(sql), "PRAGMA synchronous=FULL; "
		    "BEGIN IMMEDIATE; UPDATE jobs SET state='leased', "
		    "token=token+1, attempts=attempts+1, owner='bench', "
		    "lease_until=%lld WHERE id = (SELECT id FROM jobs WHERE "
		    "state='new' AND eligible<=%lld ORDER BY eligible, id "
		    "LIMIT 1) RETURNING id, token; COMMIT;", now + 30000, now);
		shell(s, sql, out, sizeof(out));
		if ((bar = strchr(out, '|')) == NULL)
			errx(1, "sqlite3 claim printed '%s'", out);
		*bar = '\0';
		bar[strcspn(bar + 1, "\n") + 1] = '\0';
		pathf(sql, sizeof(sql), "PRAGMA synchronous=FULL; "
		    "UPDATE jobs SET state='done', lease_until=NULL WHERE id=%s "
		    "AND token=%s AND state='leased' RETURNING id;", out,
		    bar + 1);
		shell(s, sql, out, sizeof(out));
		if (out[0] == '\0')
			errx(1, "sqlite3 finish changed nothing");
	}
}

static void
stmt(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
		errx(1, "sqlite: %s: %s", sql, sqlite3_errmsg(db));
}

/* The queue's statements, the same for one process and for many. */
static void
sqlite_stmts(struct sq *q)
{
	stmt(q->db, "INSERT INTO jobs(payload, state, eligible) "
	    "VALUES(?1, 'new', ?2)", &q->ins);
	stmt(q->db, CLAIM_SET "= " CLAIM_DUE "1) RETURNING id, token",
	    &q->claim1);
	stmt(q->db, CLAIM_SET "IN " CLAIM_DUE "?3) RETURNING id, token",
	    &q->claimn);
	stmt(q->db, "UPDATE jobs SET state='done', lease_until=NULL "
	    "WHERE id=?1 AND token=?2 AND state='leased'", &q->fin);
	if ((q->fd = open(payload_path, O_RDONLY | O_CLOEXEC)) == -1)
		err(1, "%s", payload_path);
}

static void
lib_sqlite_delete_init(struct sys *s)
{
	sqlite_stmts(db_open(s, 0));
}

static void
lib_sqlite_wal_init(struct sys *s)
{
	sqlite_stmts(db_open(s, 1));
}

static void
step_done(sqlite3 *db, sqlite3_stmt *st)
{
	if (sqlite3_step(st) != SQLITE_DONE)
		errx(1, "sqlite: %s", sqlite3_errmsg(db));
	(void)sqlite3_reset(st);
}

/* Insert a job, its payload read from its file, as spool-enqueue does. */
static void
insert(struct sq *q)
{
	char buf[PAYLOAD_SIZE];

	if (pread(q->fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
		err(1, "pread payload");
	sqlite3_bind_blob(q->ins, 1, buf, sizeof(buf), SQLITE_STATIC);
	sqlite3_bind_int64(q->ins, 2, now_ms());
	step_done(q->db, q->ins);
}

/*
 * Claim up to n due jobs in one transaction: their IDs and tokens into
 * ids and toks; how many.  The database must not be busy for long.
 */
static size_t
claim(struct sq *q, size_t n, long long *ids, long long *toks)
{
	sqlite3_stmt *st = n == 1 ? q->claim1 : q->claimn;
	long long now = now_ms();
	size_t got = 0;

	db_exec(q->db, "BEGIN IMMEDIATE");
	sqlite3_bind_int64(st, 1, now + 30000);
	sqlite3_bind_int64(st, 2, now);
	if (n > 1)
		sqlite3_bind_int64(st, 3, (sqlite3_int64)n);
	while (sqlite3_step(st) == SQLITE_ROW && got < n) {
		ids[got] = sqlite3_column_int64(st, 0);
		toks[got++] = sqlite3_column_int64(st, 1);
	}
	(void)sqlite3_reset(st);
	db_exec(q->db, "COMMIT");
	return got;
}

static void
finish(struct sq *q, long long id, long long tok)
{
	sqlite3_bind_int64(q->fin, 1, id);
	sqlite3_bind_int64(q->fin, 2, tok);
	step_done(q->db, q->fin);
	if (sqlite3_changes(q->db) != 1)
		errx(1, "sqlite finish: %lld not leased", id);
}

/*
 * n jobs a transaction for each of the three steps: one INSERT each; one
 * UPDATE ... RETURNING for the claim, in BEGIN IMMEDIATE so that two
 * claimers cannot pick the same rows; one UPDATE each for the finish.
 */
static void
lib_sqlite_cycles(struct sys *s, long k, size_t n)
{
	struct sq *q = s->st;
	long long ids[BATCH], toks[BATCH];
	double te = 0, tc = 0, tf = 0, t0;
	size_t i, got;
	long c;

	for (c = 0; c < k; c += (long)n) {
		t0 = now_s();
		if (n > 1)
			db_exec(q->db, "BEGIN");
		for (i = 0; i < n; i++)
			insert(q);
		if (n > 1)
			db_exec(q->db, "COMMIT");
		te += now_s() - t0;
		t0 = now_s();
		if ((got = claim(q, n, ids, toks)) != n)
			errx(1, "sqlite claim: %zu of %zu", got, n);
		tc += now_s() - t0;
		t0 = now_s();
		if (n > 1)
			db_exec(q->db, "BEGIN");
		for (i = 0; i < n; i++)
			finish(q, ids[i], toks[i]);
		if (n > 1)
			db_exec(q->db, "COMMIT");
		tf += now_s() - t0;
	}
	phase(s, "enqueue", k, te, -1);
	phase(s, "claim", k, tc, -1);
	phase(s, "finish", k, tf, -1);
}

static void
lib_sqlite_op(struct sys *s, long k)
{
	lib_sqlite_cycles(s, k, 1);
}

static void
batch_sqlite_op(struct sys *s, long k)
{
	lib_sqlite_cycles(s, k, BATCH);
}

/*
 * Row 10, SQLite-WAL: one database a P, a connection a worker, which
 * waits for a busy database in SQLite's own busy handler, as a user's
 * worker with sqlite3_busy_timeout does.
 */
static void
many_sqlite_prep(struct sys *s)
{
	(void)db_open(s, 1);
	db_close(s);
}

static void
many_sqlite_setup(struct sys *s)
{
	struct sq *q;
	char path[PATH_MAX];

	if ((q = calloc(1, sizeof(*q))) == NULL)
		err(1, "calloc");
	s->st = q;
	pathf(path, sizeof(path), "%s/queue.db", s->dir);
	if (sqlite3_open(path, &q->db) != SQLITE_OK)
		errx(1, "%s: %s", path, sqlite3_errmsg(q->db));
	sqlite3_busy_timeout(q->db, 60000);
	db_exec(q->db, "PRAGMA synchronous=FULL");
	sqlite_stmts(q);
}

/* A claim finds nothing while every due row is leased: it asks again. */
static void
many_sqlite_cycle(struct sys *s)
{
	struct sq *q = s->st;
	long long id, tok;

	insert(q);
	while (claim(q, 1, &id, &tok) == 0)
		continue;
	finish(q, id, tok);
}

static const struct many many_sqlite = {
	.name = "many-sqlite-wal", .prep = many_sqlite_prep,
	.setup = many_sqlite_setup, .cycle = many_sqlite_cycle,
	.teardown = db_close
};

static struct sys sqlites[] = {
	SYS("cli-sqlite-delete", cli_sqlite_delete_init, cli_sqlite_op, 1, 10),
	SYS("cli-sqlite-wal", cli_sqlite_wal_init, cli_sqlite_op, 1, 10),
	SYS("lib-sqlite-delete", lib_sqlite_delete_init, lib_sqlite_op, 1, 100),
	SYS("lib-sqlite-wal", lib_sqlite_wal_init, lib_sqlite_op, 1, 200),
	SYS("batch-lib-sqlite-wal", lib_sqlite_wal_init, batch_sqlite_op,
	    BATCH, BATCH * 4),
	{ .name = NULL }
};

const struct backend sqlite_backend = { "sqlite", sqlites, &many_sqlite };
