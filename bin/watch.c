/*
 * What wakes a worker that waits for jobs (spool-run(1), "Waiting"): a
 * line appended under the spool's audit/, which every transition made on
 * this host writes.  spool-run, spool-batch and the Python package wait
 * on the same watch.
 */
#include <sys/inotify.h>

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "common.h"

int
audit_watch(const char *dir)
{
	char audit[4200];
	int fd, err;

	if ((size_t)snprintf(audit, sizeof(audit), "%s/audit", dir) >=
	    sizeof(audit)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1)
		return -1;
	if (inotify_add_watch(fd, audit, IN_MODIFY | IN_CREATE |
	    IN_MOVED_TO) == -1) {
		err = errno;
		(void)close(fd);	/* not yet used */
		errno = err;
		return -1;
	}
	return fd;
}

int
audit_drain(int fd)
{
	char buf[4096]
	    __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t r;

	while ((r = read(fd, buf, sizeof(buf))) > 0 ||
	    (r == -1 && errno == EINTR))
		;
	return r == -1 && errno != EAGAIN ? -1 : 0;
}
