/*
 * spool-finish: end deliveries: ID TOKEN OUTCOME from the arguments, or one
 * "ID TOKEN OUTCOME" a line from stdin with "-", finished as one batch.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

const char *usage_text = "spool-finish [-d DIR] [--class CLASS] "
    "[--detail TEXT] [--delay DUR] ID TOKEN ok|retry|permanent|release | -";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR         the spool (default: $SPOOL_DIR)\n"
    "  --class CLASS  why a retry or permanent failed (default: none)\n"
    "  --detail TEXT  a short detail, kept in the sidecar (default: none)\n"
    "  --delay DUR    a retry's wait (default: the spool's backoff)\n";

static int
run(struct spool *sp, struct spool_finish *f, size_t n)
{
	int status = EXIT_DONE;
	size_t i;

	if (n == 0)
		return EXIT_DONE;
	if (spool_finish(sp, f, n) == -1)
		die(EXIT_TEMP, "%s", strerror(errno));
	for (i = 0; i < n; i++) {
		if (f[i].res.status == 0)
			printf("%s\n", f[i].id);
		status = worst(status, report(f[i].id, &f[i].res));
	}
	return status;
}

/* Lines "ID TOKEN OUTCOME" from stdin, in batches of SPOOL_BATCH_MAX. */
static int
from_stdin(struct spool *sp, const struct finish_opts *o)
{
	struct spool_finish *f;
	char **lines, *line = NULL, *w[4], *save;
	size_t cap = 0, n = 0, i, lineno = 0;
	int status = EXIT_DONE, r;

	f = calloc(SPOOL_BATCH_MAX, sizeof(*f));
	lines = calloc(SPOOL_BATCH_MAX, sizeof(*lines));
	if (f == NULL || lines == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	for (;;) {
		ssize_t len = getline(&line, &cap, stdin);

		if (len == -1 || n == SPOOL_BATCH_MAX) {
			status = worst(status, run(sp, f, n));
			for (i = 0; i < n; i++)
				free(lines[i]);
			n = 0;
		}
		if (len == -1)
			break;
		lineno++;
		if (len > 0 && line[len - 1] == '\n')
			line[len - 1] = '\0';
		if ((lines[n] = strdup(line)) == NULL)
			die(EXIT_TEMP, "%s", strerror(errno));
		w[0] = strtok_r(lines[n], " \t", &save);
		for (i = 1; i < 4; i++)
			w[i] = strtok_r(NULL, " \t", &save);
		if (w[0] == NULL || w[2] == NULL || w[3] != NULL) {
			say("stdin line %zu: want ID TOKEN OUTCOME", lineno);
			status = worst(status, EXIT_PERM);
			free(lines[n]);
			continue;
		}
		if ((r = finish_parse(&f[n], o, w[0], w[1], w[2])) != 0) {
			status = worst(status, r);
			free(lines[n]);
			continue;
		}
		n++;
	}
	if (ferror(stdin)) {
		say("stdin: %s", strerror(errno));
		status = worst(status, EXIT_TEMP);
	}
	free(line);
	free(lines);
	free(f);
	return status;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		FINISH_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct finish_opts o = { .class = SPOOL_CLASS_NONE, .delay = -1 };
	struct spool_finish f;
	const char *dir = NULL;
	struct spool *sp;
	int c, status;

	cmd_init(argv, 1);
	while ((c = cmd_getopt(argc, argv, "d:", longopts)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		default:
			if (finish_option(c, optarg, &o))
				break;
			negative_token(argv);
			usage();
		}
	}
	if (argc - optind == 1 && strcmp(argv[optind], "-") == 0) {
		if (stdin_closed)
			die(EXIT_PERM, "standard input is closed");
		sp = open_spool(spool_dir(dir));
		status = from_stdin(sp, &o);
	} else if (argc - optind == 3) {
		if ((status = finish_parse(&f, &o, argv[optind], argv[optind + 1],
		    argv[optind + 2])) != 0)
			return status;
		sp = open_spool(spool_dir(dir));
		status = run(sp, &f, 1);
	} else
		usage();
	spool_close(sp);
	return finish_stdout(status);
}
