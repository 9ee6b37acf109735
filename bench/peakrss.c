/*
 * peakrss: run a command and append "KIB STATUS SECONDS" to OUT: the peak
 * resident set of the command (getrusage of the child, ru_maxrss), its exit
 * status and its wall time.  The command's stdin and stdout are peakrss's
 * own.
 *
 *	peakrss OUT COMMAND [ARG ...]
 */
#include <sys/resource.h>
#include <sys/wait.h>

#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double
now_s(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	struct rusage ru;
	FILE *out;
	pid_t pid;
	int status;
	double t0;

	if (argc < 3) {
		fprintf(stderr, "usage: peakrss OUT COMMAND [ARG ...]\n");
		return 2;
	}
	t0 = now_s();
	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		err(127, "%s", argv[2]);
	}
	while (wait4(pid, &status, 0, &ru) == -1)
		if (errno != EINTR)
			err(1, "wait4");
	if ((out = fopen(argv[1], "a")) == NULL)
		err(1, "%s", argv[1]);
	fprintf(out, "%ld %d %.3f\n", ru.ru_maxrss, WIFEXITED(status) ?
	    WEXITSTATUS(status) : 128 + WTERMSIG(status), now_s() - t0);
	if (fclose(out) == EOF)
		err(1, "%s", argv[1]);
	return 0;
}
