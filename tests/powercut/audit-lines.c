/*
 * audit-lines DIR: every complete line of the spool's audit logs as the
 * library's parser reads it, one a line, without the time and the writer:
 * EVENT ID TOKEN ATTEMPT CYCLE ACTOR REASON CLASS NOTE.  A line the parser
 * refuses is printed as "unparsed" and its text, so that the power-cut
 * explorer sees a line that readers would skip.  Exit 0, or 111 if the
 * spool cannot be read.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "spool.h"

static const char *
dash(const char *s)
{
	return s[0] != '\0' ? s : "-";
}

static int
print(void *arg, const char *line, size_t len)
{
	struct spool_audit a;

	(void)arg;
	if (spool_audit_parse(line, len, &a) == -1) {
		printf("unparsed %.*s\n", (int)len, line);
		return 0;
	}
	printf("%s %s %" PRIu64 " %d %d %s %s %s %s\n",
	    spool_event_name(a.event), dash(a.id), a.token, a.attempt,
	    a.cycle, dash(a.actor),
	    a.reason ? spool_reason_name(a.reason) : "-",
	    a.class ? spool_class_name(a.class) : "-", dash(a.note));
	return 0;
}

int
main(int argc, char **argv)
{
	struct spool *sp;

	if (argc != 2) {
		fprintf(stderr, "usage: audit-lines DIR\n");
		return 100;
	}
	if ((sp = spool_open(argv[1])) == NULL) {
		perror(argv[1]);
		return 111;
	}
	if (spool_audit_scan(sp, print, NULL) == -1) {
		perror(argv[1]);
		return 111;
	}
	spool_close(sp);
	return fflush(stdout) == 0 ? 0 : 111;
}
