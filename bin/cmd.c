/*
 * The plumbing of every command: descriptors 0-2, messages, usage, the
 * spool's directory and its opening, options, results and exit statuses.
 * A message is one line on stderr, "spool-claim: ID: reason"; stdout
 * carries only results; the library never prints, so this does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

const char *progname = "spool";
int stdin_closed;
void (*say_hook)(const char *line);
void (*die_hook)(int status) __attribute__((noreturn));

/*
 * Descriptors 0-2 must be open before the library creates files, or a job
 * file could become someone's stdout (as Postfix's postdrop does).  A
 * command whose results go to stdout refuses to run with it closed: the
 * IDs it would print are the only way to know what it did.  A command that
 * reads stdin checks stdin_closed: /dev/null there is not an empty input.
 */
void
cmd_init(char **argv, int prints)
{
	const char *slash;
	int fd, closed1 = 0;

	if (argv[0] != NULL)
		progname = (slash = strrchr(argv[0], '/')) ? slash + 1 : argv[0];
	opterr = 0;	/* a bad option gets one line: the usage */
	for (fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		if (fd == 0)
			stdin_closed = 1;
		if (fd == 1)
			closed1 = 1;
		if (open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd)
			_exit(EXIT_TEMP);
	}
	if (closed1 && prints)
		die(EXIT_PERM, "standard output is closed");
}

static void
vsay(const char *fmt, va_list ap)
{
	/* One write: concurrent commands' lines do not interleave. */
	char line[1024];
	int n;

	char *p;

	progress_erase();	/* a message never lands inside it */
	n = snprintf(line, sizeof(line), "%.64s: ", progname);
	(void)vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	/* What the user gave may hold a newline: it must not make two. */
	for (p = line; *p != '\0'; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			*p = '?';
	if (say_hook != NULL) {
		say_hook(line);
		return;
	}
	n = (int)strlen(line);
	line[n++] = '\n';
	(void)!write(2, line, (size_t)n);	/* nowhere to report failure */
}

void
say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

void
die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	if (die_hook != NULL)
		die_hook(status);
	exit(status);
}

void
usage(void)
{
	fprintf(stderr, "usage: %s\n", usage_text);
	exit(EXIT_PERM);
}

/*
 * getopt_long(3), with the two options every command takes: --help, the
 * usage (every form, as the man page's SYNOPSIS) and a line an option on
 * stdout; --version, the version and the on-disk formats this build reads
 * (spool-layout.md, "Formats").  Neither is in a command's own table: an unknown long option
 * is looked at by name, so that "--note --help" stays a note.
 */
int
cmd_getopt(int argc, char **argv, const char *optstring,
    const struct option *longopts)
{
	const char *arg;
	int c;

	c = getopt_long(argc, argv, optstring, longopts, NULL);
	if (c != '?' || optopt != 0 || optind < 1 || optind > argc)
		return c;
	arg = argv[optind - 1];
	if (strcmp(arg, "--help") == 0) {
		printf("usage: %s\n%s", usage_text, help_text);
		exit(finish_stdout(EXIT_DONE));
	}
	if (strcmp(arg, "--version") == 0) {
		printf("%s %s (spool format %d; reads format 1 too)\n",
		    progname, SPOOL_VERSION, SPOOL_FORMAT);
		exit(finish_stdout(EXIT_DONE));
	}
	return c;
}

/*
 * getopt took an operand for an unknown option because it begins with '-'
 * and a digit, as a negative token does ("spool-finish a -1 ok"): refuse
 * it as a bad token, after its job's ID, as the other errors of a token
 * are.  Returns if the unknown option was not one.  No command has a digit
 * option but spool-ls's -0.
 */
void
negative_token(char **argv)
{
	const char *a, *id = NULL;
	int k;

	if (optopt < '0' || optopt > '9' || optind < 1)
		return;
	/* A lone "-1" is passed; "-12" is not yet, at its first digit. */
	k = optind - 1;
	a = argv[k];
	if (a[0] != '-' || a[strlen(a) - 1] != optopt)
		a = argv[++k];
	if (a == NULL || a[0] != '-' || a[1] < '0' || a[1] > '9')
		return;
	/*
	 * getopt has not yet moved the operands before it: the ID is the
	 * nearest of them that is not an outcome ("j1 ok -3").
	 */
	while (--k >= 1 && id == NULL && argv[k][0] != '-')
		if (spool_outcome_from_name(argv[k]) == -1 &&
		    spool_valid_id(argv[k]))
			id = argv[k];
	die(EXIT_PERM, "%s%sbad token '%.40s' " TOKEN_FORM,
	    id != NULL ? id : "", id != NULL ? ": " : "", a);
}

/*
 * The spool: -d DIR, else $SPOOL_DIR; or NULL, with why in buf.  A
 * command that spool-batch runs has SPOOL_BATCH_DIR, its session's
 * spool, and no other (spool-batch(1), "Requests").
 */
const char *
which_spool(const char *dflag, char *buf, size_t len)
{
	const char *dir = dflag != NULL ? dflag : getenv("SPOOL_DIR");
	const char *fixed = getenv("SPOOL_BATCH_DIR");

	if (dir == NULL || *dir == '\0') {
		(void)snprintf(buf, len, "no spool: give -d DIR or set "
		    "SPOOL_DIR");
		return NULL;
	}
	if (fixed != NULL && strcmp(dir, fixed) != 0) {
		(void)snprintf(buf, len, "-d: the session's spool is %.200s, "
		    "no other", fixed);
		return NULL;
	}
	return dir;
}

const char *
spool_dir(const char *dflag)
{
	char why[256];
	const char *dir;

	if ((dir = which_spool(dflag, why, sizeof(why))) == NULL)
		die(EXIT_PERM, "%s", why);
	return dir;
}

/*
 * What a failure of the library with err means, for a message: strerror,
 * but for a lock waited for longer than the bound of multi-host mode.
 */
const char *
errtext(int err)
{
	if (err == ETIMEDOUT)
		return spool_error(err, SPOOL_AT_CALL)->text;
	return strerror(err);
}

/*
 * Why spool_open(dir) failed with err, as the one line every command
 * prints for it, into msg; and the exit status it calls for (spool.h,
 * "Errors").  Two rows need what only the caller has: the line of config
 * at fault, and the host's ID.
 */
int
open_failure(const char *dir, int err, char *msg, size_t len)
{
	const struct spool_error *e = spool_error(err, SPOOL_AT_OPEN);
	char host[SPOOL_HOST_MAX + 1], why[256];
	int line;

	if (err == EBADMSG &&
	    (line = spool_config_error(dir, why, sizeof(why))) > 0)
		(void)snprintf(msg, len, "%s/config:%d: %s (see spool(7), "
		    "FILES)", dir, line, why);
	else if (err == EBADMSG)
		(void)snprintf(msg, len, "%s/config: malformed", dir);
	else if (err == ENOLCK && spool_fs_error(dir, why, sizeof(why)) == 1)
		(void)snprintf(msg, len, "%s: multi-host mode on %s (see "
		    "spool-layout.md, File systems)", dir, why);
	else if (err == EADDRINUSE)
		(void)snprintf(msg, len, "%s: host ID '%s' is in use by another "
		    "machine (see hosts/ in spool-layout.md): set SPOOL_HOST",
		    dir, spool_host(host));
	else if (e->text != NULL)
		(void)snprintf(msg, len, "%s: %s", dir, e->text);
	else
		(void)snprintf(msg, len, "%s: %s", dir, errtext(err));
	return e->status;
}

struct spool *
open_spool(const char *dir)
{
	struct spool *sp;
	char msg[512];
	int status;

	if ((sp = spool_open(dir)) == NULL) {
		status = open_failure(dir, errno, msg, sizeof(msg));
		die(status, "%s", msg);
	}
	return sp;
}

int64_t
opt_duration(const char *opt, const char *arg, int zero_ok)
{
	int64_t ms;

	if (spool_parse_duration(arg, &ms) == -1 || (ms == 0 && !zero_ok))
		die(EXIT_PERM, "%s: bad duration '%.40s' (use e.g. 500ms, "
		    "30s, 5m, 2h, 7d%s)", opt, arg, zero_ok ? ", 0" : "");
	return ms;
}

long
opt_number(const char *opt, const char *arg, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno != 0 ||
	    v < min || v > max)
		die(EXIT_PERM, "%s: bad number '%.40s' (%ld to %ld)", opt, arg,
		    min, max);
	return v;
}

/*
 * An option's value that valid() accepts; else one line that says the
 * rule: an ID's alphabet, or for who acts and why, printable text.
 */
const char *
opt_word(const char *opt, const char *arg, int (*valid)(const char *))
{
	if (valid == spool_valid_note && !valid(arg))
		die(EXIT_PERM, "%s: bad value (printable text, 1 to %d bytes, "
		    "not '-')", opt, SPOOL_ID_MAX);
	if (!valid(arg))
		die(EXIT_PERM, "%s: bad value (letters, digits, '.', '_', "
		    "'-'%s, starting with a letter or digit, at most %d bytes)",
		    opt, valid == spool_valid_owner ? ", ':', '@'" : "",
		    valid == spool_valid_key ? SPOOL_KEY_MAX : SPOOL_ID_MAX);
	return arg;
}

/* The library's closed sets of names that options take. */
const struct names class_names = {
	"class", NCLASS, spool_class_from_name, spool_class_name
};
const struct names reason_names = {
	"reason", NREASON, spool_reason_from_name, spool_reason_name
};

/*
 * A name of one of those sets.  An unknown one gets the name it was
 * likely meant for, spelled as spool-stat's metrics spell it
 * (rate_limited) or in capitals; else the whole set, which is short.
 */
int
opt_name(const char *opt, const char *arg, const struct names *set)
{
	char near[64], list[512];
	size_t i, len = 0;
	int v;

	if ((v = set->from_name(arg)) != -1)
		return v;
	for (i = 0; arg[i] != '\0' && i + 1 < sizeof(near); i++)
		near[i] = arg[i] == '_' ? '-' : arg[i] >= 'A' && arg[i] <= 'Z' ?
		    (char)(arg[i] - 'A' + 'a') : arg[i];
	near[i] = '\0';
	if (arg[i] == '\0' && (v = set->from_name(near)) != -1)
		die(EXIT_PERM, "%s: unknown %s '%.40s': did you mean '%s'?",
		    opt, set->what, arg, set->name(v));
	list[0] = '\0';
	for (v = 1; v < set->n; v++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
		    v == 1 ? "" : v + 1 == set->n ? " or " : ", ",
		    set->name(v));
	die(EXIT_PERM, "%s: unknown %s '%.40s' (%s)", opt, set->what, arg,
	    list);
}

/*
 * --by WHO (c 'b') or --note TICKET ('n'), the options of every command
 * that records an operator: into op, checked as spool_valid_note says.
 */
void
operator_option(int c, const char *arg, struct spool_operator *op)
{
	if (c == 'b')
		op->by = opt_word("--by", arg, spool_valid_note);
	else
		op->note = opt_word("--note", arg, spool_valid_note);
}

/*
 * Who and why: both given, or with need unset neither.  Otherwise say
 * which is missing, rather than print the usage, which does not say.
 * what, if not NULL, begins the message: the form it is missing from.
 */
void
who_and_why(const struct spool_operator *op, const char *what, int need)
{
	if ((op->by != NULL && op->note != NULL) ||
	    (!need && op->by == NULL && op->note == NULL))
		return;
	die(EXIT_PERM, "%s%s--by WHO and --note TICKET %s; missing: %s",
	    what != NULL ? what : "", what != NULL ? ": " : "",
	    need ? "are needed" : "go together", op->by == NULL ?
	    op->note == NULL ? "--by and --note" : "--by" : "--note");
}

/*
 * A job whose file or sidecar is not where it should be: moved, removed or
 * garbled by hand, or lost.  No retry mends it (100); spool-fsck --repair
 * does, or says which command does.  The line is the library's
 * (spool_result_text).
 */
int
damaged(const char *id)
{
	const struct spool_result res = { .status = -1, .err = EUCLEAN };

	return report(id, &res);
}

/*
 * A finish from ID TOKEN OUTCOME and spool-finish's options, into f; 0, or
 * an exit status after saying what is wrong.  spool-finish and spool-batch
 * read a finish alike.
 */
int
finish_parse(struct spool_finish *f, const struct finish_opts *o,
    char *id, char *token, char *outcome)
{
	int out = spool_outcome_from_name(outcome);

	memset(f, 0, sizeof(*f));
	f->id = id;
	if (!spool_valid_id(id)) {
		say("%.140s: bad ID", id);
		return EXIT_PERM;
	}
	if (spool_parse_token(token, &f->token) == -1) {
		say("%s: bad token '%.40s' " TOKEN_FORM, id, token);
		return EXIT_PERM;
	}
	if (out == -1) {
		say("%s: bad outcome '%.40s' (ok, retry, permanent or "
		    "release)", id, outcome);
		return EXIT_PERM;
	}
	f->outcome = (enum spool_outcome)out;
	if (o->class != SPOOL_CLASS_NONE && (f->outcome == SPOOL_OK ||
	    f->outcome == SPOOL_RELEASE)) {
		say("%s: --class is for retry and permanent", id);
		return EXIT_PERM;
	}
	if (o->delay != -1 && (f->outcome == SPOOL_OK ||
	    f->outcome == SPOOL_PERMANENT)) {
		say("%s: --delay is for retry and release", id);
		return EXIT_PERM;
	}
	f->class = (enum spool_class)o->class;
	f->detail = o->detail;
	f->delay_ms = o->delay;
	return 0;
}

int
enqueue_option(int c, const char *arg, struct spool_job *j)
{
	switch (c) {
	case 'i':
		j->id = opt_word("--id", arg, spool_valid_id);
		return 1;
	case 'm':
		j->max_attempts = (int)opt_number("--max-attempts", arg, 1,
		    1000000);
		return 1;
	case 'D':
		j->deadline_ms = opt_duration("--deadline", arg, 0);
		return 1;
	case 'w':
		j->delay_ms = opt_duration("--delay", arg, 1);
		return 1;
	case 'k':
		j->key = opt_word("--key", arg, spool_valid_key);
		return 1;
	case 't':
		j->trace = opt_word("--trace", arg, spool_valid_id);
		return 1;
	}
	return 0;
}

int
finish_option(int c, const char *arg, struct finish_opts *o)
{
	switch (c) {
	case 'c':
		o->class = opt_name("--class", arg, &class_names);
		return 1;
	case 't':
		o->detail = arg;
		return 1;
	case 'w':
		o->delay = opt_duration("--delay", arg, 1);
		return 1;
	}
	return 0;
}

/* One line for a refused or failed item; its exit status. */
int
report(const char *id, const struct spool_result *res)
{
	char line[SPOOL_ID_MAX * 2 + 512];
	int status;

	if ((status = spool_result_text(id, res, line, sizeof(line))) != 0)
		say("%s", line);
	return status;
}

/* A write error on stdout is a failure, even after the work is done. */
int
finish_stdout(int status)
{
	if (fflush(stdout) == EOF || ferror(stdout)) {
		say("standard output: %s%s", strerror(errno), status == 0 ?
		    " (the spool has changed)" : "");
		return worst(status, EXIT_TEMP);
	}
	return status;
}

/*
 * The default lease holder: HOST:PID, which says which process on which
 * machine holds a job.  HOST is the host ID that names the audit file
 * (spool(7), SPOOL_HOST), so that the two name a process alike.
 */
const char *
default_owner(char *buf, size_t len)
{
	char host[SPOOL_HOST_MAX + 1];

	(void)snprintf(buf, len, "%s:%ld", spool_host(host), (long)getpid());
	return buf;
}

/*
 * The more serious of two exit statuses.  111 is more serious than 100,
 * 100 than 1, and 1 than 0, which is their numeric order.
 */
int
worst(int a, int b)
{
	return a > b ? a : b;
}

