/*
 * spool-drop: end parked jobs without running them; print the IDs dropped.
 * A dropped job moves from dead/ to done/ with its payload and record, and
 * is marked dropped: it no longer counts as parked, and nothing is lost.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

const char *usage_text = "spool-drop [-d DIR] --by WHO --note TICKET "
    "ID ... | -";

struct ids {
	char **v;
	size_t n, size;
};

/* Keep a valid ID; report a bad one, which no call ever sees. */
static void
add_id(struct ids *l, const char *id, size_t len, int *status)
{
	char **v;

	if (strlen(id) != len || !spool_valid_id(id)) {
		say("%.140s: bad ID", id);
		*status = worst(*status, EXIT_PERM);
		return;
	}
	if (l->n == l->size) {
		l->size = l->size ? 2 * l->size : 64;
		if ((v = reallocarray(l->v, l->size, sizeof(*v))) == NULL)
			die(EXIT_TEMP, "%s", strerror(errno));
		l->v = v;
	}
	if ((l->v[l->n++] = strdup(id)) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
}

/* The operands, or with a lone "-" one ID a line from stdin. */
static void
read_ids(struct ids *l, char **args, int nargs, int *status)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int i;

	if (nargs != 1 || strcmp(args[0], "-") != 0) {
		for (i = 0; i < nargs; i++)
			add_id(l, args[i], strlen(args[i]), status);
		return;
	}
	while ((len = getline(&line, &cap, stdin)) != -1) {
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len > 0)
			add_id(l, line, (size_t)len, status);
	}
	if (ferror(stdin))
		die(EXIT_TEMP, "stdin: %s", strerror(errno));
	free(line);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "by", required_argument, NULL, 'b' },
		{ "note", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 }
	};
	struct spool_operator op = { NULL, NULL, 0 };
	struct spool_item *items;
	struct ids ids = { NULL, 0, 0 };
	const char *dir = NULL;
	struct spool *sp;
	size_t i, k, n;
	int c, status = EXIT_DONE;

	cmd_init(argv, 1);
	while ((c = getopt_long(argc, argv, "d:", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'b':
			op.by = opt_word("--by", optarg, spool_valid_note);
			break;
		case 'n':
			op.note = opt_word("--note", optarg, spool_valid_note);
			break;
		default:
			usage();
		}
	}
	if (op.by == NULL || op.note == NULL || optind == argc)
		usage();
	read_ids(&ids, argv + optind, argc - optind, &status);
	sp = open_spool(spool_dir(dir));
	if ((items = calloc(SPOOL_BATCH_MAX, sizeof(*items))) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	for (i = 0; i < ids.n; i += n) {
		n = ids.n - i < SPOOL_BATCH_MAX ? ids.n - i : SPOOL_BATCH_MAX;
		for (k = 0; k < n; k++)
			items[k].id = ids.v[i + k];
		if (spool_drop(sp, &op, items, n) == -1)
			die(EXIT_TEMP, "%s", strerror(errno));
		for (k = 0; k < n; k++) {
			if (items[k].res.status == 0)
				printf("%s\n", items[k].id);
			status = worst(status, report(items[k].id,
			    &items[k].res));
		}
	}
	for (i = 0; i < ids.n; i++)
		free(ids.v[i]);
	free(ids.v);
	free(items);
	spool_close(sp);
	return finish_stdout(status);
}
