/*
 * spool-batch: one process, many requests.  It opens the spool once, then
 * reads requests, one a line on stdin, and writes an answer to each on
 * stdout: the status the command would exit with, its output lines and
 * its messages (spool-batch(1)).
 *
 * Invariant: an answer is written only once its request's effect is
 * durable, or refused; a request that is not understood changes nothing.
 * enqueue, claim, renew and finish run here, on the open spool, and runs
 * of them share one wait (--group).  The operator's requests and the
 * readers run the command itself, spool-redrive for redrive: one owner
 * for each command's words, and a command's failure cannot end the
 * session.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "request.h"

#define PROTOCOL	1	/* the greeting's version: spool-batch(1) */
/* A --bytes count: none, one that is not a count, the largest. */
#define NO_BYTES	UINT64_MAX
#define BAD_BYTES	(UINT64_MAX - 1)
#define BYTES_MAX	((uint64_t)1 << 30)	/* spool-batch(1): 1G */

const char *usage_text = "spool-batch [-d DIR] [--json] [--group N]";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR     the spool (default: $SPOOL_DIR)\n"
    "  --json     requests and answers in JSON Lines\n"
    "  --group N  up to N waiting requests a wait, 1 to 256 (default: 1)\n";

enum kind { ENQUEUE, CLAIM, RENEW, FINISH, COMMAND, ANSWERED };

struct buf {
	char *p;
	size_t len, cap;
};

/* One request, and its answer as it is made. */
struct req {
	enum kind kind;
	struct buf line;	/* the request; words point into it */
	int status;		/* the answer's */
	struct buf out, err;	/* its lines (JSON: values, comma-less) */
	size_t nout, nerr;
	char **words;		/* the request's words, then NULL */
	char **argv;		/* COMMAND: the command's */
	int raw;		/* COMMAND: its lines are JSON objects */
	/* ENQUEUE: the jobs' template and payloads (fds), one a job */
	struct spool_job tmpl;
	char **files;
	size_t nfiles;
	uint64_t bytes;		/* --bytes: its count, else NO_BYTES */
	int payload;		/* --bytes: a memfd, else -1 */
	/* CLAIM */
	struct spool_claim_opts copts;
	size_t max;
	int64_t wait;		/* --wait, ms; 0: none */
	/* RENEW, FINISH */
	struct spool_finish fin;
	int64_t lease;
};

static struct spool *sp;
static const char *dir;
static int json;
static size_t group = 1;
static char owner[SPOOL_ID_MAX + 1];
static struct req reqs[SPOOL_BATCH_MAX];
static struct req *cur;		/* whose answer a message goes into */
static jmp_buf parse_failed;
static char **cmd_env;		/* the environment, SPOOL_DIR the session's */
static char cmd_dir[PATH_MAX];	/* where the commands are: beside this one */
static int cmd_out = -1, cmd_err = -1;	/* a command's stdout and stderr */
static posix_spawn_file_actions_t cmd_fa;	/* those, and stdin closed */
static posix_spawnattr_t cmd_at;	/* SIGPIPE back to its default */
static int watch = -2;		/* inotify of audit/; -1: none; -2: not yet */

/* Fatal: the session cannot go on. */
static void __attribute__((noreturn))
fatal(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	say_hook = NULL;
	die_hook = NULL;
	progname = "spool-batch";
	va_start(ap, fmt);
	(void)vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	die(EXIT_TEMP, "%s", line);
}

static void
put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		if ((p = realloc(b->p, cap)) == NULL)
			fatal("%s", strerror(errno));
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
puts_buf(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* A message of the command's, from say() or report(). */
static void
to_answer(const char *line)
{
	put(&cur->err, line, strlen(line));
	put(&cur->err, "\n", 1);
	cur->nerr++;
}

static int parse_status;	/* the answer's, after a longjmp */

static void __attribute__((noreturn))
parse_die(int status)
{
	parse_status = status;
	longjmp(parse_failed, 1);
}

/*
 * One value of the answer's output.  Text: a line, tab-separated fields.
 * JSON: a value made by bin/json.c's writers into a scratch stream.
 */
static FILE *scratch;
static char *scratch_p;
static size_t scratch_len;

static void
json_begin(void)
{
	if (fseeko(scratch, 0, SEEK_SET) == -1)
		fatal("%s", strerror(errno));
	jto(scratch);
}

static void
json_end(struct req *q)
{
	off_t n;

	if (fflush(scratch) == EOF || (n = ftello(scratch)) == -1)
		fatal("%s", strerror(errno));
	while (n > 0 && scratch_p[n - 1] == '\n')
		n--;
	if (q->nout > 0)
		put(&q->out, ",", 1);
	put(&q->out, scratch_p, (size_t)n);
	q->nout++;
}

static void
out_id(struct req *q, const char *id)
{
	if (!json) {
		puts_buf(&q->out, id);
		put(&q->out, "\n", 1);
		q->nout++;
		return;
	}
	json_begin();
	jstr(NULL, id);
	json_end(q);
}

static void
out_lease(struct req *q, const struct spool_lease *l)
{
	char line[SPOOL_ID_MAX + 64];

	if (!json) {
		(void)snprintf(line, sizeof(line), "%s\t%" PRIu64 "\t%d\t",
		    l->id, l->token, l->attempt);
		puts_buf(&q->out, line);
		puts_buf(&q->out, l->path);
		put(&q->out, "\n", 1);
		q->nout++;
		return;
	}
	json_begin();
	jbegin(NULL, '{');
	jstr("id", l->id);
	jnum("token", (int64_t)l->token);
	jnum("attempt", l->attempt);
	jnum("cycle", l->cycle);
	jtime("lease_until", l->lease_until);
	jstr("trace", l->trace);
	jstr("path", l->path);
	jend('}');
	json_end(q);
}

/* The answers written so far, out; or the session ends. */
static void
flush_answers(void)
{
	if (fflush(stdout) == EOF)
		fatal("standard output: %s (the last answers may be lost, not "
		    "their effects: show ID says what became of a job)",
		    strerror(errno));
}

/* A buffer that one large answer grew is given back after it. */
static void
shrink(struct buf *b)
{
	if (b->cap > (1 << 20)) {
		free(b->p);
		b->p = NULL;
		b->len = b->cap = 0;
	}
}

/* Write q's answer on stdout. */
static void
answer(struct req *q)
{
	const char *s, *nl;

	if (!json) {
		printf("%d %zu %zu\n", q->status, q->nout, q->nerr);
		if (q->out.len > 0)
			fwrite(q->out.p, 1, q->out.len, stdout);
		if (q->err.len > 0)
			fwrite(q->err.p, 1, q->err.len, stdout);
		shrink(&q->out);
		shrink(&q->err);
		return;
	}
	jto(stdout);
	jbegin(NULL, '{');
	jnum("status", q->status);
	printf(",\"out\":[%.*s]", (int)q->out.len, q->out.len ? q->out.p : "");
	jbegin("err", '[');
	for (s = q->err.p; q->err.len > 0 && s < q->err.p + q->err.len;
	    s = nl + 1) {
		nl = strchr(s, '\n');
		*(char *)nl = '\0';
		jstr(NULL, s);
	}
	jend(']');
	jend('}');
	shrink(&q->out);
	shrink(&q->err);
}

/* Input: requests, and the payloads that --bytes announces. */
static char in[2 * REQ_LINE_MAX + 2];
static size_t in_pos, in_end;
static int in_eof;

/* Read more of stdin; 0 at its end. */
static int
fill(void)
{
	ssize_t r;

	if (in_eof)
		return 0;
	if (in_pos > 0) {
		memmove(in, in + in_pos, in_end - in_pos);
		in_end -= in_pos;
		in_pos = 0;
	}
	do
		r = read(0, in + in_end, sizeof(in) - in_end);
	while (r == -1 && errno == EINTR);
	if (r == -1)
		fatal("standard input: %s", strerror(errno));
	if (r == 0)
		in_eof = 1;
	in_end += (size_t)r;
	return r > 0;
}

/*
 * The next line into b, without its newline: 1; 0 at the end of input;
 * -1 if it is longer than REQ_LINE_MAX (read and dropped).  A last line
 * without a newline is a line.
 */
static int
next_line(struct buf *b)
{
	char *nl;
	size_t n;
	int toolong = 0;

	while ((nl = memchr(in + in_pos, '\n', in_end - in_pos)) == NULL) {
		if (in_end - in_pos > REQ_LINE_MAX) {
			in_pos = in_end;	/* dropped; its end is looked for */
			toolong = 1;
		}
		if (!fill())
			break;
	}
	n = nl != NULL ? (size_t)(nl - (in + in_pos)) : in_end - in_pos;
	if (nl == NULL && n == 0 && !toolong)
		return 0;
	if (!toolong && n <= REQ_LINE_MAX) {
		b->len = 0;
		put(b, in + in_pos, n);
	}
	in_pos += n + (nl != NULL);
	return toolong || n > REQ_LINE_MAX ? -1 : 1;
}

/* Is a whole request line waiting?  Reads what is there, never waits. */
static int
ready(void)
{
	struct pollfd p = { 0, POLLIN, 0 };

	if (memchr(in + in_pos, '\n', in_end - in_pos) != NULL)
		return 1;
	if (in_eof || poll(&p, 1, 0) != 1 || !fill())
		return 0;
	return memchr(in + in_pos, '\n', in_end - in_pos) != NULL;
}

/*
 * n bytes of payload, then a newline, into a new memfd: its descriptor;
 * or -1, the payload read past all the same, with the answer's status and
 * why.
 */
static int
read_payload(uint64_t n, int *status, const char **why)
{
	int fd, err = 0;
	size_t k;

	if ((fd = memfd_create("spool-batch", MFD_CLOEXEC)) == -1)
		err = errno;
	while (n > 0) {
		if (in_pos == in_end && !fill()) {
			if (fd != -1)
				(void)close(fd);
			*status = EXIT_PERM;
			*why = "the payload is shorter than its count";
			return -1;
		}
		k = in_end - in_pos < n ? in_end - in_pos : (size_t)n;
		if (err == 0 && write(fd, in + in_pos, k) != (ssize_t)k)
			err = errno != 0 ? errno : ENOSPC;
		in_pos += k;
		n -= k;
	}
	if (in_pos == in_end)
		(void)fill();
	if (in_pos == in_end || in[in_pos] != '\n') {
		/* Where the request ends is lost: up to the next newline. */
		struct buf skip = { 0 };

		if (fd != -1)
			(void)close(fd);
		(void)next_line(&skip);
		free(skip.p);
		*status = EXIT_PERM;
		*why = "the payload is not followed by a newline";
		return -1;
	}
	in_pos++;
	if (err == 0 && lseek(fd, 0, SEEK_SET) == -1)
		err = errno;
	if (err != 0) {
		if (fd != -1)
			(void)close(fd);
		*status = EXIT_TEMP;
		*why = strerror(err);
		return -1;
	}
	return fd;
}

/*
 * The request's usage as its answer: for --help, its one line of output
 * and status 0; else, as a command says it, a message and 100.
 */
static void __attribute__((noreturn))
usage_answer(struct req *q, const char *text, int status)
{
	char line[512];

	(void)snprintf(line, sizeof(line), "usage: %s", text);
	if (status == EXIT_DONE)
		out_id(q, line);
	else
		to_answer(line);
	parse_die(status);
}

#define U_ENQUEUE "enqueue [--id ID] [--max-attempts N] [--deadline DUR] " \
	"[--delay DUR] [--key KEY] [--trace ID] FILE ... | --bytes N"
#define U_CLAIM "claim [--lease DUR] [--owner NAME] [-n N] [--wait DUR]"
#define U_RENEW "renew [--lease DUR] ID TOKEN"
#define U_FINISH "finish [--class CLASS] [--detail TEXT] [--delay DUR] " \
	"ID TOKEN ok|retry|permanent|release"

/* enqueue's options: bytes_given reads --bytes with them first. */
static const struct option enqueue_opts[] = {
	ENQUEUE_OPTIONS,
	{ "bytes", required_argument, NULL, 'b' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static void
parse_enqueue(struct req *q, int argc, char **argv)
{
	struct spool_job *t = &q->tmpl;
	size_t i;
	int c;

	memset(t, 0, sizeof(*t));
	t->deadline_ms = -1;
	while ((c = getopt_long(argc, argv, "", enqueue_opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage_answer(q, U_ENQUEUE, EXIT_DONE);
		case 'b':
			break;	/* read before: the payload follows the line */
		default:
			if (!enqueue_option(c, optarg, t))
				usage_answer(q, U_ENQUEUE, EXIT_PERM);
		}
	}
	q->files = argv + optind;
	q->nfiles = (size_t)(argc - optind);
	if (q->bytes != NO_BYTES && q->nfiles > 0)
		die(EXIT_PERM, "--bytes is the payload: give no FILE");
	if (q->bytes == NO_BYTES && q->nfiles == 0)
		usage_answer(q, U_ENQUEUE, EXIT_PERM);
	if (q->nfiles > SPOOL_BATCH_MAX)
		die(EXIT_PERM, "at most %d FILEs a request", SPOOL_BATCH_MAX);
	if (t->id != NULL && q->nfiles > 1)
		die(EXIT_PERM, "--id names one job: give one FILE");
	for (i = 0; i < q->nfiles; i++)
		if (strcmp(q->files[i], "-") == 0)
			die(EXIT_PERM, "-: standard input carries the requests: "
			    "give the payload with --bytes N");
}

static void
parse_claim(struct req *q, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "lease", required_argument, NULL, 'l' },
		{ "owner", required_argument, NULL, 'o' },
		{ "wait", required_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	q->copts.lease_ms = 0;
	q->copts.owner = owner;
	q->max = 1;
	q->wait = 0;
	while ((c = getopt_long(argc, argv, "n:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage_answer(q, U_CLAIM, EXIT_DONE);
		case 'l':
			q->copts.lease_ms = opt_duration("--lease", optarg, 0);
			break;
		case 'n':
			q->max = (size_t)opt_number("-n", optarg, 1,
			    SPOOL_BATCH_MAX);
			break;
		case 'o':
			q->copts.owner = opt_word("--owner", optarg,
			    spool_valid_owner);
			break;
		case 'W':
			q->wait = opt_duration("--wait", optarg, 1);
			break;
		default:
			usage_answer(q, U_CLAIM, EXIT_PERM);
		}
	}
	if (optind != argc)
		usage_answer(q, U_CLAIM, EXIT_PERM);
}

static void
parse_renew(struct req *q, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "lease", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char *id;
	int c;

	q->lease = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 'h')
			usage_answer(q, U_RENEW, EXIT_DONE);
		if (c != 'l') {
			negative_token(argv);
			usage_answer(q, U_RENEW, EXIT_PERM);
		}
		q->lease = opt_duration("--lease", optarg, 0);
	}
	if (argc - optind != 2)
		usage_answer(q, U_RENEW, EXIT_PERM);
	id = argv[optind];
	if (!spool_valid_id(id))
		die(EXIT_PERM, "%.140s: bad ID", id);
	q->fin.id = id;
	if (spool_parse_token(argv[optind + 1], &q->fin.token) == -1)
		die(EXIT_PERM, "%s: bad token '%.40s' " TOKEN_FORM, id,
		    argv[optind + 1]);
}

static void
parse_finish(struct req *q, int argc, char **argv)
{
	static const struct option longopts[] = {
		FINISH_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct finish_opts o = { .class = SPOOL_CLASS_NONE, .delay = -1 };
	int c, status;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage_answer(q, U_FINISH, EXIT_DONE);
		default:
			if (finish_option(c, optarg, &o))
				break;
			negative_token(argv);
			usage_answer(q, U_FINISH, EXIT_PERM);
		}
	}
	if (argc - optind != 3)
		usage_answer(q, U_FINISH, EXIT_PERM);
	if ((status = finish_parse(&q->fin, &o, argv[optind],
	    argv[optind + 1], argv[optind + 2])) != 0)
		parse_die(status);
}

/* The operator's requests and the readers: the commands of those names. */
static const char *const commands[] = {
	"redrive", "drop", "cancel", "pause", "resume", "purge", "ls", "show",
	"stat", "fsck", NULL
};

static void
parse_command(struct req *q, int argc, char **argv)
{
	int i, json_too = json && (strcmp(argv[0], "ls") == 0 ||
	    strcmp(argv[0], "show") == 0 || strcmp(argv[0], "stat") == 0);

	q->raw = json_too;
	if ((q->argv = calloc((size_t)argc + 2, sizeof(*q->argv))) == NULL)
		fatal("%s", strerror(errno));
	for (i = 0; i < argc; i++)
		q->argv[i + json_too] = argv[i];
	q->argv[0] = argv[0];
	if (json_too)
		q->argv[1] = "--json";
}

/*
 * The count that --bytes gives, read before the request is understood,
 * since its payload follows the line: enqueue's options read as enqueue
 * reads them (--byt is --bytes); or, in a line whose first word is no
 * request (a misspelt enqueue), a word --bytes N or --bytes=N.  Another
 * request takes no payload, and its words are not looked at: a
 * "--detail --bytes=5" is a detail.  NO_BYTES: none; BAD_BYTES: a count
 * that is not one, with why.
 */

/* The requests done here; the others run commands[]. */
static const struct request {
	const char *name;
	enum kind kind;
	void (*parse)(struct req *, int, char **);
} requests[] = {
	{ "enqueue", ENQUEUE, parse_enqueue },
	{ "claim", CLAIM, parse_claim },
	{ "renew", RENEW, parse_renew },
	{ "finish", FINISH, parse_finish },
	{ NULL, ANSWERED, NULL }
};

/* The request done here that word names, or NULL. */
static const struct request *
request_of(const char *word)
{
	const struct request *r;

	for (r = requests; r->name != NULL; r++)
		if (strcmp(word, r->name) == 0)
			return r;
	return NULL;
}

/* The command that word names, or NULL. */
static const char *
command_of(const char *word)
{
	const char *const *c;

	for (c = commands; *c != NULL; c++)
		if (strcmp(word, *c) == 0)
			return *c;
	return NULL;
}

static uint64_t
bytes_given(int argc, char **argv, const char **why)
{
	static char *copy[REQ_WORDS_MAX + 1];
	const char *v = NULL;
	uint64_t n;
	char *end;
	int i, c;

	if (strcmp(argv[0], "enqueue") == 0) {
		memcpy(copy, argv, ((size_t)argc + 1) * sizeof(*argv));
		optind = 0;
		while ((c = getopt_long(argc, copy, "", enqueue_opts, NULL)) !=
		    -1)
			if (c == 'b')
				v = optarg;
	} else if (request_of(argv[0]) == NULL && command_of(argv[0]) == NULL) {
		for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
			if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc)
				v = argv[++i];
			else if (strncmp(argv[i], "--bytes=", 8) == 0)
				v = argv[i] + 8;
	}
	if (v == NULL)
		return NO_BYTES;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0 ||
	    n > BYTES_MAX) {
		*why = "--bytes: not a count of bytes, 0 to 1073741824";
		return BAD_BYTES;
	}
	return n;
}

/*
 * What words ask for, into q: -1, or the status of its answer, made.  The
 * parsers' messages go into the answer, and their die() ends here.
 */
static int
understand(struct req *q, int n, char **words)
{
	const struct request *r;

	optind = 0;	/* glibc: start getopt afresh */
	die_hook = parse_die;
	if (setjmp(parse_failed) != 0) {
		die_hook = NULL;
		return parse_status;
	}
	if ((r = request_of(words[0])) != NULL) {
		q->kind = r->kind;
		r->parse(q, n, words);
	} else if (command_of(words[0]) != NULL) {
		q->kind = COMMAND;
		parse_command(q, n, words);
	} else {
		progname = "spool-batch";
		die(EXIT_PERM, "unknown request '%.40s'", words[0]);
	}
	die_hook = NULL;
	return -1;
}

/*
 * Read the next request into q and understand it: 1, with q->status -1
 * if it is to be done, or its answer made; 0 at the end of input.
 */
static int
read_request(struct req *q)
{
	const char *why = NULL;
	char **words;
	size_t n;
	int r, status = EXIT_PERM;

	q->status = -1;
	q->out.len = q->err.len = 0;
	q->nout = q->nerr = 0;
	q->payload = -1;
	q->kind = ANSWERED;
	memset(&q->fin, 0, sizeof(q->fin));
	cur = q;
	if ((r = next_line(&q->line)) == 0)
		return 0;
	progname = "spool-batch";
	if (r == -1) {
		say("request longer than %d bytes", REQ_LINE_MAX);
		q->status = EXIT_PERM;
		return 1;
	}
	put(&q->line, "", 0);	/* room for the last word's NUL */
	if (q->words == NULL && (q->words = calloc(REQ_WORDS_MAX + 1,
	    sizeof(*q->words))) == NULL)
		fatal("%s", strerror(errno));
	words = q->words;
	if (req_words(q->line.p, q->line.len, json, words, REQ_WORDS_MAX, &n,
	    &why) == -1 || n == 0) {
		say("malformed request: %s", n == 0 && why == NULL ?
		    "no words" : why);
		q->status = EXIT_PERM;
		return 1;
	}
	words[n] = NULL;
	q->bytes = bytes_given((int)n, words, &why);
	if (q->bytes == BAD_BYTES || (q->bytes != NO_BYTES &&
	    (q->payload = read_payload(q->bytes, &status, &why)) == -1)) {
		say("%s", why);
		q->status = q->bytes == BAD_BYTES ? EXIT_PERM : status;
		return 1;
	}
	if (q->payload != -1 && strcmp(words[0], "enqueue") != 0) {
		(void)close(q->payload);
		q->payload = -1;
		say("unknown request '%.40s' (its payload was read and "
		    "dropped)", words[0]);
		q->status = EXIT_PERM;
		return 1;
	}
	/* A word of the commands': spool-claim's messages for claim. */
	{
		static char name[32];

		(void)snprintf(name, sizeof(name), "spool-%.20s", words[0]);
		progname = name;
	}
	if ((status = understand(q, (int)n, words)) != -1) {
		q->status = status;
		q->kind = ANSWERED;
		if (q->payload != -1)
			(void)close(q->payload);
		q->payload = -1;
	}
	return 1;
}

/* The session's stdin and stdout, which no FILE may be. */
static struct stat std_in, std_out;

static int
ours(const struct stat *st)
{
	return (st->st_dev == std_in.st_dev && st->st_ino == std_in.st_ino) ||
	    (st->st_dev == std_out.st_dev && st->st_ino == std_out.st_ino);
}

/* Enqueue: the jobs of q[0..n) in one call, one wait. */
static void
do_enqueue(struct req **q, size_t n)
{
	static struct spool_job jobs[SPOOL_BATCH_MAX];
	static struct req *whose[SPOOL_BATCH_MAX];
	static const char *what[SPOOL_BATCH_MAX];
	size_t i, k, m = 0;
	int fd, err;

	for (i = 0; i < n; i++) {
		cur = q[i];
		progname = "spool-enqueue";
		q[i]->status = EXIT_DONE;
		if (q[i]->payload != -1) {
			jobs[m] = q[i]->tmpl;
			jobs[m].fd = q[i]->payload;
			q[i]->payload = -1;
			whose[m] = q[i];
			what[m++] = q[i]->tmpl.id != NULL ? q[i]->tmpl.id :
			    "-";
			continue;
		}
		for (k = 0; k < q[i]->nfiles; k++) {
			struct stat st;

			fd = open(q[i]->files[k], O_RDONLY | O_CLOEXEC);
			if (fd != -1 && fstat(fd, &st) == 0 &&
			    (S_ISDIR(st.st_mode) || ours(&st))) {
				(void)close(fd);
				fd = -1;
				errno = S_ISDIR(st.st_mode) ? EISDIR : EBUSY;
			}
			if (fd == -1) {
				err = errno;
				say("%s: %s", q[i]->files[k], err == EBUSY ?
				    "the session's own standard input or output" :
				    strerror(err));
				q[i]->status = worst(q[i]->status,
				    err == ENOENT || err == EACCES ||
				    err == EISDIR || err == EBUSY ? EXIT_PERM :
				    EXIT_TEMP);
				continue;
			}
			jobs[m] = q[i]->tmpl;
			jobs[m].fd = fd;
			whose[m] = q[i];
			what[m++] = q[i]->tmpl.id != NULL ? q[i]->tmpl.id :
			    q[i]->files[k];
		}
	}
	if (spool_enqueue(sp, jobs, m) == -1) {
		char buf[256];
		const char *why;

		err = errno;
		why = err == EDQUOT ? reserve_text(sp, buf, sizeof(buf)) :
		    errtext(err);
		for (i = 0; i < n; i++) {
			cur = q[i];
			say("%s", why);
			q[i]->status = EXIT_TEMP;
		}
		for (k = 0; k < m; k++)
			(void)close(jobs[k].fd);
		return;
	}
	for (k = 0; k < m; k++) {
		(void)close(jobs[k].fd);
		cur = whose[k];
		if (jobs[k].res.status == 0)
			out_id(cur, jobs[k].idbuf);
		else
			cur->status = worst(cur->status,
			    report(what[k], &jobs[k].res));
	}
}

/* A clock that steps neither back nor forward, in ms. */
static int64_t
mono_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* When a claim may next find work, in ms from now, as spool-run waits. */
static int64_t
until_due(int64_t claimed_at)
{
	int64_t due, now;

	if (spool_paused(sp) == 1)
		return INT64_MAX;	/* the resume is an audit line */
	if (spool_next_due(sp, &due) == -1)
		return 1000;
	if (due == INT64_MAX)
		return INT64_MAX;
	now = spool_now();
	if (due > claimed_at)
		return due > now ? due - now : 0;
	/* Due, yet nothing was claimed: another holds it this moment. */
	return 1000;
}

/*
 * Claim for q alone, waiting up to q->wait for a due job as spool-run(1),
 * "Waiting", says: until a job is due or an audit line is appended here.
 */
static int
claim_waiting(struct req *q, struct spool_lease *out, size_t *got)
{
	int64_t until = mono_ms() + q->wait, left, pause, at;
	struct pollfd p[2];
	int r;

	if (watch == -2)
		watch = audit_watch(dir);
	for (;;) {
		if (watch >= 0)
			(void)audit_drain(watch);
		at = spool_now();
		if ((r = spool_claim(sp, &q->copts, out, q->max, got)) != 0)
			return r;
		if ((left = until - mono_ms()) <= 0)
			return 0;
		pause = until_due(at);
		if (watch < 0 && pause > 1000)
			pause = 1000;
		if (pause > left)
			pause = left;
		/*
		 * A client gone (its end of stdout closed) ends the wait and
		 * the session; the answers before it were written.
		 */
		p[0].fd = 1;
		p[0].events = 0;
		p[1].fd = watch;
		p[1].events = POLLIN;
		if (poll(p, watch >= 0 ? 2 : 1, (int)(pause < INT_MAX ? pause :
		    INT_MAX)) == -1 && errno != EINTR)
			fatal("poll: %s", strerror(errno));
		if (p[0].revents & (POLLERR | POLLHUP)) {
			/* Nobody to answer, and nothing claimed: the end. */
			spool_close(sp);
			exit(EXIT_DONE);
		}
	}
}

/*
 * Finishes f of q[0..nf), then claims for c[0..nc) (all with the first's
 * options), in one call and one wait: spool_finish_claim.
 */
static void
do_finish_claim(struct req **fq, size_t nf, struct req **cq, size_t nc)
{
	static struct spool_finish f[SPOOL_BATCH_MAX];
	static struct spool_lease out[SPOOL_BATCH_MAX];
	size_t i, k, max = 0, got = 0, at = 0;
	int r = 0, fr = 0, err = 0;

	for (i = 0; i < nf; i++)
		f[i] = fq[i]->fin;
	for (i = 0; i < nc; i++)
		max += cq[i]->max;
	if (nc == 1 && cq[0]->wait > 0)
		r = claim_waiting(cq[0], out, &got);
	else if (nc > 0 && nf > 0)
		r = spool_finish_claim(sp, f, nf, &cq[0]->copts, out, max,
		    &got);
	else if (nc > 0)
		r = spool_claim(sp, &cq[0]->copts, out, max, &got);
	else
		fr = spool_finish(sp, f, nf);
	err = errno;
	for (i = 0; i < nf; i++) {
		cur = fq[i];
		progname = "spool-finish";
		if (fr == -1) {
			say("%s", strerror(err));
			cur->status = EXIT_TEMP;
			continue;
		}
		if (f[i].res.status == 0)
			out_id(cur, f[i].id);
		cur->status = report(f[i].id, &f[i].res);
	}
	for (i = 0; i < nc; i++) {
		cur = cq[i];
		progname = "spool-claim";
		if (r == -1) {
			say("%s", errtext(err));
			cur->status = EXIT_TEMP;
			continue;
		}
		for (k = 0; k < cur->max && at < got; k++)
			out_lease(cur, &out[at++]);
		cur->status = k > 0 ? EXIT_DONE : EXIT_NO;
		if (k == 0 && spool_paused(sp) == 1)
			say("spool paused");
	}
	spool_free_leases(out, got);
}

static void
do_renew(struct req *q)
{
	struct spool_result res;

	cur = q;
	progname = "spool-renew";
	if (spool_renew(sp, q->fin.id, q->fin.token, q->lease, &res) == -1 &&
	    res.status == 0) {
		say("%s: %s", q->fin.id, errtext(errno));
		q->status = EXIT_TEMP;
		return;
	}
	q->status = report(q->fin.id, &res);
}

/*
 * Split what a command wrote on fd into q's lines; raw: JSON objects
 * already.  A NUL ends a line as a newline does: ls -0 gives lines here.
 */
static void
command_lines(struct req *q, int fd, int is_err, int raw)
{
	static struct buf b;
	char chunk[65536], *s, *nl;
	ssize_t r;

	b.len = 0;
	if (lseek(fd, 0, SEEK_SET) == -1)
		fatal("memfd: %s", strerror(errno));
	while ((r = read(fd, chunk, sizeof(chunk))) > 0)
		put(&b, chunk, (size_t)r);
	if (r == -1)
		fatal("memfd: %s", strerror(errno));
	if (b.len > 0 && b.p[b.len - 1] != '\n' && b.p[b.len - 1] != '\0')
		put(&b, "\n", 1);
	for (s = b.p; b.len > 0 && s < b.p + b.len; s = nl + 1) {
		for (nl = s; *nl != '\n' && *nl != '\0'; nl++)
			;
		*nl = '\0';
		if (is_err) {
			to_answer(s);
		} else if (!json) {
			put(&q->out, s, (size_t)(nl - s) + 1);
			q->out.p[q->out.len - 1] = '\n';
			q->nout++;
		} else if (raw && *s == '{') {
			if (q->nout++ > 0)
				put(&q->out, ",", 1);
			put(&q->out, s, (size_t)(nl - s));
		} else {
			json_begin();
			jstr(NULL, s);
			json_end(q);
		}
	}
	shrink(&b);
}

/* Run the command the request names, its output and messages the answer. */
static void
do_command(struct req *q)
{
	char path[PATH_MAX + 32];
	pid_t pid;
	int st, err;

	cur = q;
	progname = "spool-batch";
	if (ftruncate(cmd_out, 0) == -1 || ftruncate(cmd_err, 0) == -1 ||
	    lseek(cmd_out, 0, SEEK_SET) == -1 ||
	    lseek(cmd_err, 0, SEEK_SET) == -1)
		fatal("memfd: %s", strerror(errno));
	(void)snprintf(path, sizeof(path), "%s/spool-%s", cmd_dir,
	    q->argv[0]);
	q->argv[0] = strrchr(path, '/') + 1;
	err = posix_spawn(&pid, path, &cmd_fa, &cmd_at, q->argv, cmd_env);
	free(q->argv);
	q->argv = NULL;
	if (err != 0) {
		say("%s: %s", path, strerror(err));
		q->status = EXIT_TEMP;
		return;
	}
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR)
			fatal("waitpid: %s", strerror(errno));
	command_lines(q, cmd_out, 0, q->raw);
	command_lines(q, cmd_err, 1, 0);
	if (WIFEXITED(st))
		q->status = WEXITSTATUS(st);
	else {
		say("%s: killed by signal %d", path, WTERMSIG(st));
		q->status = EXIT_TEMP;
	}
}

/* Options of two claims that do not wait the same: one call serves both. */
static int
same_claim(const struct req *a, const struct req *b)
{
	return a->copts.lease_ms == b->copts.lease_ms &&
	    strcmp(a->copts.owner, b->copts.owner) == 0;
}

/*
 * Do q[0..n) in order.  Runs share a call, and so its wait: enqueues; and
 * finishes with the claims after them.
 */
static void
serve(struct req *q, size_t n)
{
	struct req *a[SPOOL_BATCH_MAX], *b[SPOOL_BATCH_MAX];
	size_t i = 0, done = 0, na, nb, jobs, max;

	while (i < n) {
		/* What is done is answered, in order, before what is next. */
		for (; done < i; done++)
			answer(&q[done]);
		switch (q[i].kind) {
		case ANSWERED:
			i++;
			break;
		case ENQUEUE:
			/* A request's jobs: its FILEs, or its payload. */
			for (na = 0, jobs = 0; i < n && (q[i].kind == ANSWERED ||
			    (q[i].kind == ENQUEUE && jobs + q[i].nfiles +
			    (q[i].nfiles == 0) <= SPOOL_BATCH_MAX)); i++)
				if (q[i].kind == ENQUEUE) {
					jobs += q[i].nfiles + (q[i].nfiles == 0);
					a[na++] = &q[i];
				}
			do_enqueue(a, na);
			break;
		case FINISH:
		case CLAIM:
			for (na = 0; i < n && (q[i].kind == ANSWERED ||
			    q[i].kind == FINISH); i++)
				if (q[i].kind == FINISH)
					a[na++] = &q[i];
			nb = 0;
			/*
			 * A claim that waits is a call of its own, and what
			 * was answered before it is written first.
			 */
			if (na == 0 && i < n && q[i].kind == CLAIM &&
			    q[i].wait > 0) {
				flush_answers();
				b[nb++] = &q[i++];
			} else
				for (max = 0; i < n && (q[i].kind == ANSWERED ||
				    (q[i].kind == CLAIM && q[i].wait == 0 &&
				    (nb == 0 || same_claim(b[0], &q[i])) &&
				    max + q[i].max <= SPOOL_BATCH_MAX)); i++)
					if (q[i].kind == CLAIM) {
						max += q[i].max;
						b[nb++] = &q[i];
					}
			do_finish_claim(a, na, b, nb);
			break;
		case RENEW:
			do_renew(&q[i++]);
			break;
		case COMMAND:
			do_command(&q[i++]);
			break;
		}
	}
	for (; done < n; done++)
		answer(&q[done]);
}

/*
 * How a command is run: its stdout and stderr the memfds, its stdin
 * closed, and SIGPIPE, which this process ignores, back to its default.
 */
static void
spawn_setup(void)
{
	posix_spawn_file_actions_t *fa = &cmd_fa;
	posix_spawnattr_t *at = &cmd_at;
	sigset_t dfl;
	int err;

	(void)sigemptyset(&dfl);
	(void)sigaddset(&dfl, SIGPIPE);
	if ((err = posix_spawn_file_actions_init(fa)) != 0 ||
	    (err = posix_spawn_file_actions_adddup2(fa, cmd_out, 1)) != 0 ||
	    (err = posix_spawn_file_actions_adddup2(fa, cmd_err, 2)) != 0 ||
	    (err = posix_spawn_file_actions_addclose(fa, 0)) != 0 ||
	    (err = posix_spawnattr_init(at)) != 0 ||
	    (err = posix_spawnattr_setsigdefault(at, &dfl)) != 0 ||
	    (err = posix_spawnattr_setflags(at, POSIX_SPAWN_SETSIGDEF)) != 0)
		die(EXIT_TEMP, "posix_spawn: %s", strerror(err));
}

/* Where this program is: the commands it runs are beside it. */
static void
find_commands(void)
{
	char *slash;
	ssize_t n;

	if ((n = readlink("/proc/self/exe", cmd_dir, sizeof(cmd_dir) - 1)) ==
	    -1)
		die(EXIT_TEMP, "/proc/self/exe: %s", strerror(errno));
	cmd_dir[n] = '\0';
	if ((slash = strrchr(cmd_dir, '/')) != NULL)
		*slash = '\0';
}

/*
 * The environment of the commands: SPOOL_DIR is the session's spool, and
 * SPOOL_BATCH_DIR makes a command refuse a -d that names another
 * (spool_dir in bin/cmd.c).
 */
static void
make_env(void)
{
	extern char **environ;
	size_t n = 0, k = 0;
	char *var, *fixed;

	while (environ[n] != NULL)
		n++;
	if ((cmd_env = calloc(n + 3, sizeof(*cmd_env))) == NULL ||
	    asprintf(&var, "SPOOL_DIR=%s", dir) == -1 ||
	    asprintf(&fixed, "SPOOL_BATCH_DIR=%s", dir) == -1)
		die(EXIT_TEMP, "%s", strerror(errno));
	for (n = 0; environ[n] != NULL; n++)
		if (strncmp(environ[n], "SPOOL_DIR=", 10) != 0 &&
		    strncmp(environ[n], "SPOOL_BATCH_DIR=", 16) != 0)
			cmd_env[k++] = environ[n];
	cmd_env[k++] = var;
	cmd_env[k] = fixed;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "group", required_argument, NULL, 'g' },
		{ NULL, 0, NULL, 0 }
	};
	static char outbuf[65536];
	const char *dflag = NULL;
	size_t n;
	int c;

	cmd_init(argv, 1);
	while ((c = cmd_getopt(argc, argv, "d:", longopts)) != -1) {
		switch (c) {
		case 'd':
			dflag = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'g':
			group = (size_t)opt_number("--group", optarg, 1,
			    SPOOL_BATCH_MAX);
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (stdin_closed)
		die(EXIT_PERM, "standard input is closed");
	dir = spool_dir(dflag);
	sp = open_spool(dir);
	find_commands();
	make_env();
	(void)default_owner(owner, sizeof(owner));
	if ((cmd_out = memfd_create("stdout", MFD_CLOEXEC)) == -1 ||
	    (cmd_err = memfd_create("stderr", MFD_CLOEXEC)) == -1 ||
	    (scratch = open_memstream(&scratch_p, &scratch_len)) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	spawn_setup();
	if (fstat(0, &std_in) == -1 || fstat(1, &std_out) == -1)
		die(EXIT_TEMP, "fstat: %s", strerror(errno));
	/* A closed stdout is an error of a write, not a signal; the
	 * commands run are waited for, even if SIGCHLD came ignored. */
	(void)signal(SIGPIPE, SIG_IGN);
	(void)signal(SIGCHLD, SIG_DFL);
	(void)setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	say_hook = to_answer;
	if (json)
		printf("{\"protocol\":\"spool-batch\",\"version\":%d}\n",
		    PROTOCOL);
	else
		printf("spool-batch %d\n", PROTOCOL);
	for (;;) {
		flush_answers();
		for (n = 0; n < group && (n == 0 || ready()); n++)
			if (!read_request(&reqs[n]))
				break;
		if (n == 0)
			break;
		serve(reqs, n);
	}
	say_hook = NULL;
	spool_close(sp);
	return EXIT_DONE;
}
