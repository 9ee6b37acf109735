/*
 * sidecars: the floor of a look at every job.
 *
 *	sidecars [-l] SPOOL
 *
 * Reads every sidecar in SPOOL/meta once, as the least a listing or a
 * count by sidecar must do: open, one read, close, in directory order.
 * With -l, also lstat(2)s every file under new/, leased/, done/ and dead/
 * once, as a listing that shows a job's mode and size must (spool-layout.md,
 * "Readers").  Prints FILES,BYTES.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

/* lstat every file below the directory dfd (closed), in directory order. */
static unsigned long
stat_tree(int dfd)
{
	struct dirent *de;
	struct stat st;
	unsigned long n = 0;
	DIR *d;
	int fd;

	if ((d = fdopendir(dfd)) == NULL)
		err(1, "fdopendir");
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (de->d_type == DT_DIR) {
			if ((fd = openat(dirfd(d), de->d_name, O_RDONLY |
			    O_DIRECTORY | O_CLOEXEC)) == -1)
				err(1, "%s", de->d_name);
			n += stat_tree(fd);
			continue;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
		    -1)
			err(1, "%s", de->d_name);
		n++;
	}
	(void)closedir(d);
	return n;
}

int
main(int argc, char **argv)
{
	static char buf[65536];
	struct dirent *de;
	unsigned long files = 0, bytes = 0;
	ssize_t n;
	static const char *const states[] = { "new", "leased", "done", "dead" };
	DIR *d;
	int dfd, fd, i, lflag = 0;

	if (argc == 3 && strcmp(argv[1], "-l") == 0) {
		lflag = 1;
		argv++;
		argc--;
	}
	if (argc != 2)
		errx(2, "usage: sidecars [-l] SPOOL");
	if ((dfd = open(argv[1], O_RDONLY | O_DIRECTORY)) == -1 ||
	    (fd = openat(dfd, "meta", O_RDONLY | O_DIRECTORY)) == -1 ||
	    (d = fdopendir(fd)) == NULL)
		err(1, "%s/meta", argv[1]);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if ((fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC |
		    O_NOFOLLOW)) == -1)
			err(1, "%s", de->d_name);
		if ((n = read(fd, buf, sizeof(buf))) == -1)
			err(1, "%s", de->d_name);
		(void)close(fd);
		files++;
		bytes += (unsigned long)n;
	}
	(void)closedir(d);
	for (i = 0; lflag && i < 4; i++) {
		if ((fd = openat(dfd, states[i], O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC)) == -1)
			err(1, "%s/%s", argv[1], states[i]);
		(void)stat_tree(fd);
	}
	printf("%lu,%lu\n", files, bytes);
	return 0;
}
