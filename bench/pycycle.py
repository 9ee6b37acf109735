"""qbench's Python side (bench/README.md, rows 3 and 11).  For each
number K read from stdin, K jobs on the spool named by argv[1]; then one
line, "K", on stdout.  Mode "cycle": K cycles, each an enqueue of 100
bytes, a claim and a finish ok, as a Python program writes them.  Mode
"work N": spool.work with N threads and a no-op handler drains the K
jobs qbench enqueued, as spool-run -j N drains them."""

import sys

import spool

PAYLOAD = b"p" * 99 + b"\n"     # qbench's payload


def cycles(sp: spool.Spool, k: int) -> int:
    for _ in range(k):
        sp.enqueue(PAYLOAD)
        [job] = sp.claim(lease=30)
        job.ok()
    return k


def main() -> None:
    mode = sys.argv[2] if len(sys.argv) > 2 else "cycle"
    with spool.Spool(sys.argv[1]) as sp:
        for line in sys.stdin:
            k = int(line)
            if mode == "work":
                k = spool.work(sys.argv[1], lambda job: None, lease=30,
                               concurrency=int(sys.argv[3]), idle_exit=0)
            else:
                k = cycles(sp, k)
            sys.stdout.write("%d\n" % k)
            sys.stdout.flush()


if __name__ == "__main__":
    main()
