/*
 * Row 10, PostgreSQL: a connection a worker, each statement its own
 * transaction, committed with fsync=on and synchronous_commit=on (the
 * server's settings, which bench.sh gives), on a table of its own for
 * each P.  A claim takes the oldest ready row that no other claim holds,
 * by SELECT ... FOR UPDATE SKIP LOCKED, so no two workers lease one job.
 */
#define _GNU_SOURCE
#include <err.h>
#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qbench.h"

static void
pg_die(PGconn *c, const char *what)
{
	char *m = PQerrorMessage(c);

	errx(1, "postgresql: %s: %.*s", what, (int)strcspn(m, "\n"), m);
}

static PGconn *
pg_connect(void)
{
	double give_up = now_s() + 20;
	PGconn *c;

	if (opt.pg_conninfo == NULL)
		errx(1, "many-pg needs -q CONNINFO");
	/* The script has just started the server: wait for it. */
	for (;;) {
		c = PQconnectdb(opt.pg_conninfo);
		if (PQstatus(c) == CONNECTION_OK)
			return c;
		if (now_s() > give_up)
			pg_die(c, "connect");
		PQfinish(c);
		(void)usleep(50000);
	}
}

static void
pg_ok(PGconn *c, PGresult *res, const char *what)
{
	ExecStatusType st = PQresultStatus(res);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		pg_die(c, what);
}

static void
pg_exec(PGconn *c, const char *sql)
{
	PGresult *res = PQexec(c, sql);

	pg_ok(c, res, sql);
	PQclear(res);
}

/* The table of this P's turns. */
static void
pg_table(const struct sys *s, char *buf, size_t size)
{
	pathf(buf, size, "jobs_p%d", s->procs);
}

static void
many_pg_prep(struct sys *s)
{
	PGconn *c = pg_connect();
	char t[32], sql[512];

	pg_table(s, t, sizeof(t));
	pg_exec(c, "SET client_min_messages = warning");
	pathf(sql, sizeof(sql), "CREATE TABLE IF NOT EXISTS %s("
	    "id bigserial PRIMARY KEY, payload bytea NOT NULL, "
	    "state text NOT NULL, token bigint NOT NULL DEFAULT 0, "
	    "attempts integer NOT NULL DEFAULT 0, "
	    "lease_until timestamptz, owner text)", t);
	pg_exec(c, sql);
	pathf(sql, sizeof(sql), "CREATE INDEX IF NOT EXISTS %s_ready ON %s(id) "
	    "WHERE state = 'ready'", t, t);
	pg_exec(c, sql);
	PQfinish(c);
}

static void
pg_prepare(PGconn *c, const char *name, const char *sql, int n)
{
	PGresult *res = PQprepare(c, name, sql, n, NULL);

	pg_ok(c, res, name);
	PQclear(res);
}

static void
many_pg_setup(struct sys *s)
{
	PGconn *c = pg_connect();
	char t[32], sql[512];

	s->st = c;
	pg_table(s, t, sizeof(t));
	pathf(sql, sizeof(sql), "INSERT INTO %s(payload, state) "
	    "VALUES($1, 'ready')", t);
	pg_prepare(c, "ins", sql, 1);
	pathf(sql, sizeof(sql), "UPDATE %s SET state = 'running', "
	    "token = token + 1, attempts = attempts + 1, owner = 'bench', "
	    "lease_until = now() + interval '30 s' WHERE id = "
	    "(SELECT id FROM %s WHERE state = 'ready' ORDER BY id "
	    "FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING id, token", t, t);
	pg_prepare(c, "claim", sql, 0);
	pathf(sql, sizeof(sql), "UPDATE %s SET state = 'done', "
	    "lease_until = NULL WHERE id = $1 AND token = $2 AND "
	    "state = 'running'", t);
	pg_prepare(c, "fin", sql, 2);
}

static void
many_pg_teardown(struct sys *s)
{
	PQfinish(s->st);
	s->st = NULL;
}

/* A claim finds nothing while every ready row is held: it asks again. */
static void
many_pg_cycle(struct sys *s)
{
	PGconn *c = s->st;
	const char *vals[2];
	int lens[2] = { PAYLOAD_SIZE, 0 }, fmts[2] = { 1, 0 };
	char id[32], tok[32];
	PGresult *res;

	vals[0] = payload;
	res = PQexecPrepared(c, "ins", 1, vals, lens, fmts, 0);
	pg_ok(c, res, "insert");
	PQclear(res);
	for (;;) {
		res = PQexecPrepared(c, "claim", 0, NULL, NULL, NULL, 0);
		pg_ok(c, res, "claim");
		if (PQntuples(res) == 1)
			break;
		PQclear(res);
	}
	pathf(id, sizeof(id), "%s", PQgetvalue(res, 0, 0));
	pathf(tok, sizeof(tok), "%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	vals[0] = id;
	vals[1] = tok;
	res = PQexecPrepared(c, "fin", 2, vals, NULL, NULL, 0);
	pg_ok(c, res, "finish");
	if (strcmp(PQcmdTuples(res), "1") != 0)
		errx(1, "postgresql finish: job %s not running", id);
	PQclear(res);
}

static const struct many many_pg = {
	.name = "many-pg", .prep = many_pg_prep, .setup = many_pg_setup,
	.cycle = many_pg_cycle, .teardown = many_pg_teardown
};

static struct sys pgs[] = {
	{ .name = NULL }
};

const struct backend pg_backend = { "postgresql", pgs, &many_pg };
