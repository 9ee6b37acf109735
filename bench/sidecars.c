/*
 * sidecars: the floor of a look at every job.
 *
 *	sidecars SPOOL
 *
 * Reads every sidecar in SPOOL/meta once, as the least a listing or a
 * count by sidecar must do: open, one read, close, in directory order.
 * Prints FILES,BYTES.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	static char buf[65536];
	struct dirent *de;
	unsigned long files = 0, bytes = 0;
	ssize_t n;
	DIR *d;
	int dfd, fd;

	if (argc != 2)
		errx(2, "usage: sidecars SPOOL");
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
	printf("%lu,%lu\n", files, bytes);
	return 0;
}
