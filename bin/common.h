/*
 * What every command shares: the exit-status vocabulary, messages in the
 * form "spool-claim: ID: reason", option helpers, and the final check that
 * standard output was really written.
 */
#ifndef SPOOL_COMMON_H
#define SPOOL_COMMON_H

#include <stdint.h>

#include "spool.h"

/* spool(7), EXIT STATUS: the one vocabulary of every command. */
#define EXIT_DONE	0	/* done */
#define EXIT_NO		1	/* a negative answer */
#define EXIT_PERM	100	/* usage or permanent error */
#define EXIT_TEMP	111	/* temporary failure */

extern const char *progname;
extern int stdin_closed;
extern const char *usage_text;

void cmd_init(char **argv, int prints);
void die(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
void usage(void) __attribute__((noreturn));
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
struct spool *open_spool(const char *dir);
const char *spool_dir(const char *dflag);
int64_t opt_duration(const char *opt, const char *arg, int zero_ok);
long opt_number(const char *opt, const char *arg, long min, long max);
const char *opt_word(const char *opt, const char *arg,
    int (*valid)(const char *));
const char *default_owner(char *buf, size_t len);
int report(const char *id, const struct spool_result *res);
int finish_stdout(int status);
int worst(int a, int b);

#endif
