/*
 * What every command shares: the exit-status vocabulary, messages in the
 * form "spool-claim: ID: reason", option helpers, and the final check that
 * standard output was really written.  Then what several share: times and
 * jobs as the inspection commands show them, JSON on stdout, and the lists
 * of IDs that the operator's commands read, select and act on.
 */
#ifndef SPOOL_COMMON_H
#define SPOOL_COMMON_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "spool.h"

/* spool(7), EXIT STATUS: the one vocabulary of every command. */
#define EXIT_DONE	0	/* done */
#define EXIT_NO		1	/* a negative answer */
#define EXIT_PERM	100	/* usage or permanent error */
#define EXIT_TEMP	111	/* temporary failure */
/* What a token may be, as a bad one's message says (SPOOL_TOKEN_MAX). */
#define TOKEN_FORM	"(a number from 1 to 10^18-1)"

extern const char *progname;
extern int stdin_closed;
extern const char *usage_text;
extern const char *help_text;	/* a line an option, for --help */
/*
 * spool-batch's: a message goes into the answer instead of to stderr, and
 * die() ends the request, not the process (die_hook does not return).
 */
extern void (*say_hook)(const char *line);
extern void (*die_hook)(int status) __attribute__((noreturn));

void cmd_init(char **argv, int prints);
void die(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
void usage(void) __attribute__((noreturn));
struct option;
int cmd_getopt(int argc, char **argv, const char *optstring,
    const struct option *longopts);
void negative_token(char **argv);
int reserve_figures(struct spool *sp, char *buf, size_t len);
const char *reserve_text(struct spool *sp, char *buf, size_t len);
void fmt_size(char *buf, size_t len, uint64_t n);
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *errtext(int err);
int open_failure(const char *dir, int err, char *msg, size_t len);
struct spool *open_spool(const char *dir);
const char *which_spool(const char *dflag, char *buf, size_t len);
const char *spool_dir(const char *dflag);
int64_t opt_duration(const char *opt, const char *arg, int zero_ok);
long opt_number(const char *opt, const char *arg, long min, long max);
const char *opt_word(const char *opt, const char *arg,
    int (*valid)(const char *));
/* The library's closed sets of names: classes 1 .. NCLASS - 1, reasons. */
#define NCLASS	(SPOOL_CLASS_LEASE_EXPIRED + 1)
#define NREASON	(SPOOL_REASON_CANCELLED + 1)
struct names {
	const char *what;
	int n;
	int (*from_name)(const char *);
	const char *(*name)(int);
};
extern const struct names class_names, reason_names;
int opt_name(const char *opt, const char *arg, const struct names *set);
/* --by and --note, as OPERATOR_OPTIONS names them: 'b' and 'n'. */
#define OPERATOR_OPTIONS \
	{ "by", required_argument, NULL, 'b' }, \
	{ "note", required_argument, NULL, 'n' }
void operator_option(int c, const char *arg, struct spool_operator *op);
void who_and_why(const struct spool_operator *op, const char *what,
    int need);
const char *default_owner(char *buf, size_t len);
int report(const char *id, const struct spool_result *res);
/* spool-finish's options; the finish they and ID TOKEN OUTCOME make. */
struct finish_opts {
	int class;
	const char *detail;
	int64_t delay;		/* -1: not given */
};
int finish_parse(struct spool_finish *f, const struct finish_opts *o,
    char *id, char *token, char *outcome);
/*
 * The options of spool-enqueue and spool-finish, which spool-batch's
 * requests take too: their long options, and each one's value read into
 * a job or a finish's options; 0 if c is none of them.
 */
#define ENQUEUE_OPTIONS \
	{ "id", required_argument, NULL, 'i' }, \
	{ "max-attempts", required_argument, NULL, 'm' }, \
	{ "deadline", required_argument, NULL, 'D' }, \
	{ "delay", required_argument, NULL, 'w' }, \
	{ "key", required_argument, NULL, 'k' }, \
	{ "trace", required_argument, NULL, 't' }
int enqueue_option(int c, const char *arg, struct spool_job *j);
#define FINISH_OPTIONS \
	{ "class", required_argument, NULL, 'c' }, \
	{ "detail", required_argument, NULL, 't' }, \
	{ "delay", required_argument, NULL, 'w' }
int finish_option(int c, const char *arg, struct finish_opts *o);
/* relay.c: a handler's stderr, on spool-run's and kept for its finish. */
#define TAIL_MAX	300	/* bytes of the handler's stderr kept */
#define LINE_MAX_OUT	1024	/* a longer line of a handler's is split */
struct relay {
	int fd;			/* read end of its stderr pipe, or -1 */
	char tail[TAIL_MAX];	/* the last bytes of its stderr */
	size_t ntail;
	char line[LINE_MAX_OUT];	/* its line not yet ended */
	size_t nline;
};
void relay_read(struct relay *r, const char *id, int reads);
void relay_end(struct relay *r, const char *id);
void relay_detail(const struct relay *r, const char *why, char *buf,
    size_t len);
/* keeper.c: spool-run's handlers die with it. */
int keeper_start(const char *resdir, pid_t *pid);
int keeper_enrol(int fd);
void keeper_forget(int fd, pid_t pid);
int damaged(const char *id);
int finish_stdout(int status);
int worst(int a, int b);
static inline int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/*
 * watch.c: a descriptor that becomes readable when a line is appended
 * under dir/audit/ (inotify, non-blocking), or -1 with errno; and what it
 * holds read away: 0, or -1 with errno if it can no longer be read.
 */
int audit_watch(const char *dir);
int audit_drain(int fd);

/* A progress line on a terminal, for long runs. */
void progress_begin(int want, double hint);
void progress_show(const char *what, size_t done, size_t total);
void progress_hide(void);
void progress_erase(void);

/* Times and jobs as people read them. */
const char *fmt_age(char *buf, size_t len, int64_t ms);
const char *fmt_duration(char *buf, size_t len, int64_t ms);
const char *fmt_time(char *buf, size_t len, int64_t ms);
const char *dash(const char *s);
size_t width(const char *s);
const char *disposition(const struct spool_job_info *in);
int deliveries(const struct spool_job_info *in);

/*
 * JSON on stdout, or on the stream jto() names, one value at a time: key
 * NULL inside an array.  An object or array opened at the top ends with a
 * newline when it closes.  One value at a time in a process.
 */
void jto(FILE *out);
void jbegin(const char *key, int bracket);
void jend(int bracket);
void jstr(const char *key, const char *s);
void jnum(const char *key, int64_t v);
void jtime(const char *key, int64_t ms);
void jbool(const char *key, int v);
void jjob(const struct spool_job_info *in, int64_t now);
const char *damage_text(const struct spool_job_info *in);

/* IDs named or selected, each with the time its job entered its state. */
struct pick {
	char *id;
	int64_t since;
};

struct picks {
	struct pick *v;
	size_t n, size;
	size_t bad;		/* operands or lines that were not IDs */
};

extern int ids_nul;
int ids_on_stdin(char **args, int nargs);
void read_ids(struct picks *l, char **args, int nargs, int *status);
void picks_add(struct picks *l, const char *id, size_t len, int64_t since,
    int *status);
void picks_sort(struct picks *l, int (*cmp)(const void *, const void *));
int picks_oldest_first(const void *a, const void *b);
void picks_free(struct picks *l);
void list_ids(struct spool *sp, enum spool_state state, struct picks *l);
void select_jobs(struct spool *sp, enum spool_state state,
    int (*match)(void *arg, const struct spool_job_info *in), void *arg,
    struct picks *l, int *status);

/* The operator's actions on a list of IDs. */
typedef int (*item_action)(struct spool *sp,
    const struct spool_operator *op, struct spool_item *items, size_t n);

int in_batches(const struct picks *l, int64_t before,
    int (*act)(void *arg, struct spool_item *items, size_t n), void *arg);
void named_in_batches(char **args, int nargs, int64_t before,
    int (*act)(void *arg, struct spool_item *items, size_t n), void *arg,
    int *status);
void preview(struct spool *sp, struct spool_item *item,
    enum spool_state from, int refusal, int need_reconciled,
    int need_unedited);
int act_main(int argc, char **argv, item_action action);
int pause_main(int argc, char **argv, int on);

#endif
