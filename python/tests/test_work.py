"""spool.work: spool-run(1)'s worker in this process, against the state
on disk and the log of spool-run(1), "The log"."""

import logging
import os
import re
import select
import signal
import subprocess
import sys
import threading

import pytest

import spool

TOP = os.path.join(os.path.dirname(__file__), "..", "..")
BIN = os.path.join(TOP, "tests", "bin")
ENV = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python"))


def no_backoff_soon(sp):
    """A retry waits an hour: a worker with idle_exit=0 does not meet
    it again however slow the machine."""
    with open(os.path.join(sp.path, "config"), "a") as f:
        f.write("backoff=1h\nbackoff-max=1h\n")


def lines(text):
    """The log's lines, each with its time, token and duration replaced:
    the order of claims is the spool's to choose.  Sorted."""
    return sorted(re.sub(
        r" token=[0-9]+ (.*) duration=[0-9]+\.[0-9]{3}s ",
        r" token=N \1 duration=D ",
        re.sub(r"^[0-9-]+T[0-9:.]+Z ", "T ", line)) for line in text)


def logged(caplog):
    return lines(r.getMessage() for r in caplog.records if r.name == "spool")


def until(what, seconds=20):
    """Wait for what() to be true, by polling: the test fails after
    seconds, it does not pass."""
    ev = threading.Event()
    for _ in range(int(seconds * 100)):
        if what():
            return
        ev.wait(0.01)
    raise AssertionError("never happened")


def test_each_way_a_handler_ends_is_finished_as_spool_run_does(sp, caplog):
    caplog.set_level(logging.INFO, "spool")
    no_backoff_soon(sp)
    for i in ("okay", "later", "park", "crash", "itself"):
        sp.enqueue(i.encode(), id=i)

    def handler(job):
        if job.id == "later":
            raise spool.Retry(delay=60, cls="rate-limited")
        if job.id == "park":
            raise spool.Permanent(cls="invalid-input", detail="no user")
        if job.id == "crash":
            raise KeyError("boom")
        if job.id == "itself":
            job.release(delay=60)

    assert spool.work(sp.path, handler, lease=30, idle_exit=0) == 5
    assert logged(caplog) == sorted([
        "T okay token=N attempt=1 exception=- duration=D outcome=ok "
        "class=- state=done",
        "T later token=N attempt=1 exception=Retry duration=D "
        "outcome=retry class=rate-limited state=new",
        "T park token=N attempt=1 exception=Permanent duration=D "
        "outcome=permanent class=invalid-input state=dead reason=permanent",
        "T crash token=N attempt=1 exception=KeyError duration=D "
        "outcome=retry class=crashed state=new",
        "T itself token=N attempt=1 exception=- duration=D outcome=- "
        "class=- state=-",
    ])
    crashed = [r for r in caplog.records if "crash" in r.getMessage()]
    assert crashed[0].exc_info[0] is KeyError     # the traceback goes along
    got = {i.id: (i.state, i.reason, i.cls, i.detail, i.attempts)
           for s in ("new", "done", "dead") for i in sp.list(s)}
    assert got == {
        "okay": ("done", None, None, None, 1),
        "later": ("new", None, "rate-limited", None, 1),
        "park": ("dead", "permanent", "invalid-input", "no user", 1),
        "crash": ("new", None, "crashed", "KeyError: 'boom'", 1),
        "itself": ("new", None, None, None, 0),
    }
    later = sp.show("later")
    assert 59000 <= later.eligible_ms - later.deliveries[0].ended_ms <= 60000


def test_once_max_jobs_and_idle_exit_end_the_worker(sp):
    assert spool.work(sp.path, lambda job: None, lease=30, once=True) == 0
    for i in range(3):
        sp.enqueue(b"x", id="j%d" % i)
    assert spool.work(sp.path, lambda job: None, lease=30, once=True) == 1
    assert spool.work(sp.path, lambda job: None, lease=30,
                      max_jobs=1) == 1
    # Which of the three is the spool's choice: they were due at once.
    assert (len(list(sp.list("new"))), len(list(sp.list("done")))) == (1, 2)
    assert spool.work(sp.path, lambda job: None, lease=30, concurrency=4,
                      idle_exit=0) == 1
    assert [i.id for i in sp.list("done")] == ["j0", "j1", "j2"]


def test_sixteen_threads_do_each_job_once_and_side_by_side(sp):
    ids = ["j%03d" % i for i in range(300)]
    assert all(isinstance(r, str) for r in sp.enqueue_many(
        (b"x", {"id": i}) for i in ids))
    lock = threading.Lock()
    ran, now, most = [], [0], [0]
    names = set()

    def handler(job):
        with lock:
            ran.append(job.id)
            now[0] += 1
            most[0] = max(most[0], now[0])
            names.add(threading.current_thread().name)
        threading.Event().wait(0.002)
        with lock:
            now[0] -= 1

    assert spool.work(sp.path, handler, lease=30, concurrency=16,
                      idle_exit=0) == 300
    assert sorted(ran) == ids
    assert [i.id for i in sp.list("done")] == ids
    assert most[0] > 1 and len(names) > 1
    oks = [a.id for a in sp.audit() if a.event == "ok"]
    assert sorted(oks) == ids


@pytest.mark.parametrize("how, stopped, said, state", [
    ("cancel", "cancelled", "cancelled by ops", "dead"),
    ("release", "lost", "lost (not leased)", "new"),
])
def test_a_job_taken_from_its_handler_is_seen_and_left_alone(
        sp, caplog, how, stopped, said, state):
    caplog.set_level(logging.INFO, "spool")
    sp.enqueue(b"x", id="c1")
    seen = []

    def handler(job):
        # An operator cancels it, or someone ends the delivery with this
        # lease's token.
        if how == "cancel":
            with spool.Spool(sp.path) as other:
                other.cancel(["c1"], by="ops", note="T-1")
        else:
            subprocess.run([os.path.join(BIN, "spool-finish"), "-d",
                            sp.path, "--delay", "1h", job.id,
                            str(job.token), "release"], check=True)
        until(lambda: job.cancelled)
        seen.append(job.stopped)

    # A lease of an hour: the change is seen by its audit line, not at a
    # renewal.
    assert spool.work(sp.path, handler, lease=3600, idle_exit=0) == 1
    assert seen == [stopped]
    assert logged(caplog) == sorted([
        "c1: %s: handler asked to stop, job not finished" % said,
        "T c1 token=N attempt=1 exception=- duration=D outcome=- class=- "
        "state=- stopped=" + stopped,
    ])
    assert sp.show("c1").state == state


def test_a_handler_past_its_timeout_is_asked_to_stop_and_retried(
        sp, caplog):
    caplog.set_level(logging.INFO, "spool")
    no_backoff_soon(sp)
    sp.enqueue(b"x", id="t1")
    seen = []

    def handler(job):
        until(lambda: job.cancelled)
        seen.append(job.stopped)

    assert spool.work(sp.path, handler, lease=30, timeout=0.2,
                      idle_exit=0) == 1
    assert seen == ["timeout"]
    assert logged(caplog) == sorted([
        "T t1 token=N attempt=1 exception=- duration=D outcome=retry "
        "class=timeout state=new stopped=timeout",
    ])
    info = sp.show("t1")
    assert (info.state, info.cls, info.detail, info.attempts) == (
        "new", "timeout", "timed out after 200ms", 1)


def test_a_handler_that_exits_the_program_is_finished_first(sp):
    no_backoff_soon(sp)
    sp.enqueue(b"x", id="e1")

    def handler(job):
        sys.exit(3)

    with pytest.raises(SystemExit) as e:
        spool.work(sp.path, handler, lease=30, idle_exit=0)
    assert e.value.code == 3
    info = sp.show("e1")
    assert (info.state, info.cls, info.detail) == ("new", "crashed",
                                                   "SystemExit: 3")


WORKER = """
import logging, os, spool, sys, threading
logging.basicConfig(format="%(message)s", level=logging.INFO)
def handler(job):
    os.write(1, b"started %s\\n" % job.id.encode())
    # quick ends once the file go is there; slow only when stopped.
    while not (os.path.exists(sys.argv[2]) if job.id == "quick"
               else job.cancelled):
        threading.Event().wait(0.01)
n = spool.work(sys.argv[1], handler, lease=30, concurrency=2,
               grace=3600)
print("returned", n, flush=True)
"""


def line(p, seconds=60):
    """The child's next line, or a failure after seconds: not a hang."""
    got = b""
    poll = select.poll()
    poll.register(p.stdout, select.POLLIN)
    while not got.endswith(b"\n"):
        if not poll.poll(seconds * 1000):
            raise AssertionError("no line from the worker")
        c = os.read(p.stdout.fileno(), 1)
        if not c:
            break
        got += c
    return got.decode()


def test_a_signal_lets_handlers_end_within_the_grace_a_second_ends_it(
        sp, tmp_path):
    sp.enqueue(b"x", id="quick")
    sp.enqueue(b"x", id="slow")
    go = str(tmp_path / "go")
    p = subprocess.Popen([sys.executable, "-c", WORKER, sp.path, go],
                         env=ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, bufsize=0)
    try:
        assert sorted([line(p), line(p)]) == [
            "started quick\n", "started slow\n"]
        p.send_signal(signal.SIGTERM)
        # Told after the signal, quick ends within the grace: finished ok.
        open(go, "w").close()
        until(lambda: sp.show("quick").state == "done")
        assert sp.show("slow").state == "leased"
        p.send_signal(signal.SIGINT)      # the second ends the grace
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert (p.returncode, out) == (0, b"returned 2\n")
    assert lines(err.decode().splitlines()) == sorted([
        "T quick token=N attempt=1 exception=- duration=D outcome=ok "
        "class=- state=done",
        "T slow token=N attempt=1 exception=- duration=D outcome=release "
        "class=- state=new stopped=shutdown",
    ])
    slow = sp.show("slow")
    assert (slow.state, slow.attempts, slow.detail) == (
        "new", 0, "stopped after the grace")


def test_a_job_its_handler_finished_is_not_timed_out(sp, caplog):
    caplog.set_level(logging.INFO, "spool")
    sp.enqueue(b"x", id="f1")

    def handler(job):
        job.ok()
        threading.Event().wait(0.5)     # past the timeout, done already
        assert not job.cancelled

    assert spool.work(sp.path, handler, lease=30, timeout=0.1,
                      idle_exit=0) == 1
    assert logged(caplog) == [
        "T f1 token=N attempt=1 exception=- duration=D outcome=- class=- "
        "state=-",
    ]
    assert sp.show("f1").state == "done"


def test_max_jobs_holds_across_threads_and_another_thread_may_run_it(sp):
    for i in range(10):
        sp.enqueue(b"x", id="j%d" % i)
    got = []
    t = threading.Thread(target=lambda: got.append(spool.work(
        sp.path, lambda job: None, lease=30, concurrency=4, max_jobs=3)))
    t.start()
    t.join(60)
    assert got == [3]
    assert (len(list(sp.list("done"))), len(list(sp.list("new")))) == (3, 7)


def test_a_bad_retry_is_a_crash_that_names_it(sp):
    no_backoff_soon(sp)
    sp.enqueue(b"x", id="b1")

    def handler(job):
        raise spool.Retry(detail=123)

    assert spool.work(sp.path, handler, lease=30, idle_exit=0) == 1
    info = sp.show("b1")
    assert (info.state, info.cls, info.detail) == (
        "new", "crashed", "TypeError: detail: a str, not int")


@pytest.mark.parametrize("kw, error", [
    ({"concurrency": 0}, "concurrency: bad number 0 (1 to 256)"),
    ({"concurrency": 257}, "concurrency: bad number 257 (1 to 256)"),
    ({"max_jobs": 0}, "max_jobs: bad number 0 (1 or more)"),
    ({"lease": 0}, "lease: bad duration 0 (seconds, 1 ms or more)"),
    ({"grace": -1}, "grace: bad duration -1 (seconds, 0 or more)"),
    ({"timeout": -1}, "timeout: bad duration -1 (seconds, 0 or more)"),
    ({"owner": "a b"}, "owner: bad value (letters, digits, '.', '_', '-', "
     "':', '@', starting with a letter or digit, at most 128 bytes)"),
])
def test_bad_arguments_raise_and_claim_nothing(sp, kw, error):
    sp.enqueue(b"x", id="j1")
    args = dict({"lease": 30}, **kw)
    with pytest.raises(spool.InvalidArgument) as e:
        spool.work(sp.path, lambda job: None, **args)
    assert str(e.value) == error
    assert [i.id for i in sp.list("new")] == ["j1"]
    assert [a.event for a in sp.audit()] == ["enqueue"]
