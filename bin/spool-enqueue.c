/* spool-enqueue: publish one job per FILE (stdin when none); print IDs. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

const char *usage_text = "spool-enqueue [-d DIR] [--id ID] [--max-attempts N] "
    "[--deadline DUR] [--delay DUR] [--key KEY] [--trace ID] [FILE ...]";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR            the spool (default: $SPOOL_DIR)\n"
    "  --id ID           the job's ID (default: a new one, printed)\n"
    "  --max-attempts N  deliveries before it parks (default: the spool's, 5)\n"
    "  --deadline DUR    time allowed from now (default: the spool's, 7d)\n"
    "  --delay DUR       eligible after DUR (default: 0, at once)\n"
    "  --key KEY         the job's key, for the spool's limits (default: none)\n"
    "  --trace ID        a trace ID kept with the job (default: none)\n";

/* Files open at once: well under the usual limit of 1024 descriptors. */
#define CHUNK	256

/* One wait's jobs, and the number of the file of each. */
static struct spool_job jobs[CHUNK];
static size_t which[CHUNK];

/* FILE ("-": stdin) open for reading, or -1 with errno (EISDIR too). */
static int
open_payload(const char *f)
{
	int fd = strcmp(f, "-") == 0 ? dup(0) : open(f, O_RDONLY | O_CLOEXEC);
	struct stat st;

	if (fd != -1 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		(void)close(fd);
		errno = EISDIR;
		return -1;
	}
	return fd;
}

/*
 * Enqueue files[0..n-1] as tmpl says, in one call and one wait; print the
 * ID of each job enqueued, and name each file or ID refused.  The exit
 * status of the worst.  A file that cannot be opened is the caller's
 * fault (100) unless the system is (111).
 */
static int
enqueue_chunk(struct spool *sp, const struct spool_job *tmpl, char **files,
    size_t n)
{
	size_t k, opened = 0;
	int fd, status = EXIT_DONE;

	for (k = 0; k < n; k++) {
		if ((fd = open_payload(files[k])) == -1) {
			say("%s: %s", files[k], strerror(errno));
			status = worst(status, errno == ENOENT ||
			    errno == EACCES || errno == EISDIR ?
			    EXIT_PERM : EXIT_TEMP);
			continue;
		}
		jobs[opened] = *tmpl;
		jobs[opened].fd = fd;
		which[opened++] = k;
	}
	/* EDQUOT from the whole call is the spool's reserve. */
	if (spool_enqueue(sp, jobs, opened) == -1) {
		char why[256];

		if (errno != EDQUOT)
			die(EXIT_TEMP, "%s", errtext(errno));
		die(EXIT_TEMP, "%s", reserve_text(sp, why, sizeof(why)));
	}
	progress_hide();
	for (k = 0; k < opened; k++) {
		struct spool_job *j = &jobs[k];

		(void)close(j->fd);	/* read-only */
		/* A generated ID means nothing yet: name the file. */
		if (j->res.status == 0)
			printf("%s\n", j->idbuf);
		else
			status = worst(status, report(tmpl->id != NULL ?
			    tmpl->id : files[which[k]], &j->res));
	}
	(void)fflush(stdout);	/* the IDs before the count */
	return status;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		ENQUEUE_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	struct spool_job tmpl;
	static char *stdin_only[] = { "-", NULL };
	const char *dir = NULL;
	struct spool *sp;
	char **files;
	size_t nfiles, i, n;
	int c, status = EXIT_DONE;

	cmd_init(argv, 1);
	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.deadline_ms = -1;
	while ((c = cmd_getopt(argc, argv, "d:", longopts)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		default:
			if (!enqueue_option(c, optarg, &tmpl))
				usage();
		}
	}
	files = optind < argc ? argv + optind : stdin_only;
	nfiles = optind < argc ? (size_t)(argc - optind) : 1;
	if (tmpl.id != NULL && nfiles > 1)
		die(EXIT_PERM, "--id names one job: give one FILE");
	for (i = 0; i < nfiles; i++)
		if (stdin_closed && strcmp(files[i], "-") == 0)
			die(EXIT_PERM, "standard input is closed");
	sp = open_spool(spool_dir(dir));
	progress_begin(nfiles > CHUNK, 0);
	for (i = 0; i < nfiles; i += n) {
		n = nfiles - i < CHUNK ? nfiles - i : CHUNK;
		status = worst(status, enqueue_chunk(sp, &tmpl, files + i, n));
		progress_show("files", i + n, nfiles);
	}
	progress_erase();
	spool_close(sp);
	return finish_stdout(status);
}
