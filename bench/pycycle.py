"""The job cycle from Python, for qbench's lib-python (bench/README.md,
row 3): for each number K read from stdin, K cycles on the spool named
by argv[1], each an enqueue of 100 bytes, a claim and a finish ok, as a
Python program writes them; then one line, "K", on stdout."""

import sys

import spool

PAYLOAD = b"p" * 99 + b"\n"     # qbench's payload


def main() -> None:
    with spool.Spool(sys.argv[1]) as sp:
        for line in sys.stdin:
            k = int(line)
            for _ in range(k):
                sp.enqueue(PAYLOAD)
                [job] = sp.claim(lease=30)
                job.ok()
            sys.stdout.write("%d\n" % k)
            sys.stdout.flush()


if __name__ == "__main__":
    main()
