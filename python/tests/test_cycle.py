"""The job cycle from Python: enqueue, claim, finish, against the state
on disk and the errors of lib/spool.h, "Errors"."""

import errno
import json
import os
import re
import signal
import subprocess
import sys
import threading

import pytest

import spool

TOP = os.path.join(os.path.dirname(__file__), "..", "..")
BIN = os.path.join(TOP, "tests", "bin")


def files(sp, state):
    """The names of the files in STATE/ (new/ and leased/: every level)."""
    out = []
    for _, _, fs in os.walk(os.path.join(sp, state)):
        out += fs
    return sorted(out)


def test_init_refuses_what_is_not_a_spool(tmp_path):
    (tmp_path / "x").write_text("")
    with pytest.raises(spool.PermanentError) as e:
        spool.init(str(tmp_path / "x"))
    assert str(e.value) == "[Errno 20] not a directory: '%s'" % (tmp_path / "x")
    with pytest.raises(spool.PermanentError) as e:
        spool.Spool(str(tmp_path))
    assert e.value.errno == 61      # ENODATA: not a spool
    assert e.value.strerror == ("not a spool (no format file; see "
                                "spool-init(1))")


def test_a_malformed_config_names_its_line_and_what_is_wrong(tmp_path):
    path = str(tmp_path / "spool")
    spool.init(path)
    with open(path + "/config", "a") as f:
        f.write("lease=forever\n")
    with pytest.raises(spool.PermanentError) as e:
        spool.Spool(path)
    assert str(e.value) == (
        "[Errno 74] lease=forever: not a duration above 0, such as 500ms, "
        "30s, 5m, 2h or 7d (see spool(7), FILES): '%s/config:12'" % path)


def test_a_refused_file_system_is_named_as_the_commands_name_it(tmp_path):
    # A FUSE mount of its own (bindfs), as tests/61-open.bats makes one.
    if os.getuid() != 0 or not os.path.exists("/dev/fuse") or \
            subprocess.run(["sh", "-c", "command -v bindfs"],
                           stdout=subprocess.DEVNULL).returncode != 0:
        assert os.environ.get("CI") != "true", "needs root and bindfs in CI"
        pytest.skip("needs root, /dev/fuse and bindfs")
    (tmp_path / "under").mkdir()
    (tmp_path / "fuse").mkdir()
    subprocess.run(["bindfs", str(tmp_path / "under"), str(tmp_path / "fuse")],
                   check=True)
    try:
        path = str(tmp_path / "fuse" / "spool")
        spool.init(path)
        with open(path + "/config", "a") as f:
            f.write("multi-host=yes\nskew=2s\n")
        with pytest.raises(spool.PermanentError) as e:
            spool.Spool(path)
        assert str(e.value) == (
            "[Errno 37] multi-host mode on fuse, a file system whose locks "
            "other hosts may not see (see spool-layout.md, File systems): "
            "'%s'" % path)
    finally:
        subprocess.run(["umount", str(tmp_path / "fuse")])


def test_a_cycle_moves_the_job_and_keeps_its_bytes(sp):
    assert sp.enqueue(b"to=alice\x00", id="order-1842") == "order-1842"
    # new/'s name ends in the time it is due (spool-layout.md, "Names")
    assert [f.split(",")[0] for f in files(sp.path, "new")] == ["order-1842"]
    [job] = sp.claim(lease=30)
    assert (job.id, job.token, job.attempt, job.cycle) == \
        ("order-1842", 1, 1, 1)
    assert job.payload == b"to=alice\x00"
    assert files(sp.path, "leased") == ["order-1842,1"]
    job.ok()
    assert files(sp.path, "done") == ["order-1842"]
    assert files(sp.path, "leased") == []
    assert sp.claim(lease=30) == []


def test_payloads_of_every_kind(sp, tmp_path):
    p = tmp_path / "p"
    p.write_bytes(b"from a path")
    big = os.urandom(200000)
    ids = [sp.enqueue("text é", id="s"), sp.enqueue(p, id="p"),
           sp.enqueue(big, id="big")]
    with open(p, "rb") as f:
        ids.append(sp.enqueue(f, id="f"))
    assert ids == ["s", "p", "big", "f"]
    got = {j.id: j.payload for j in sp.claim(lease=30, n=4)}
    assert got == {"s": "text é".encode(), "p": b"from a path",
                   "big": big, "f": b"from a path"}


def test_a_duplicate_is_refused_and_names_its_place(sp):
    sp.enqueue(b"x", id="j1")
    with pytest.raises(spool.Duplicate) as e:
        sp.enqueue(b"y", id="j1")
    assert (e.value.id, e.value.state) == ("j1", "new")
    res = sp.enqueue_many([b"a", (b"b", {"id": "j1"}), (b"c", {"id": "j2"})])
    assert isinstance(res[1], spool.Duplicate) and res[2] == "j2"
    assert len(res[0]) == 36        # a UUID


def test_a_stale_finish_is_refused_after_a_takeover(sp):
    sp.enqueue(b"x", id="j1")
    [old] = sp.claim(lease=0.001)
    threading.Event().wait(0.01)
    [new] = sp.claim(lease=30)
    assert new.token > old.token and new.attempt == 2
    with pytest.raises(spool.StaleToken) as e:
        old.ok()
    assert str(e.value) == \
        "j1: stale token: the current token is 2 and the job is in leased/"
    assert (e.value.id, e.value.state, e.value.token) == ("j1", "leased", 2)
    new.ok()


def test_a_refusal_says_where_the_job_is_in_the_commands_words(sp):
    sp.enqueue(b"x", id="j1")
    [job] = sp.claim(lease=30)
    assert command("spool-cancel", "-d", sp.path, "--by", "ops", "--note",
                   "INC-3", "j1") == (0, "j1\n", "")
    for call in (job.ok, lambda: job.renew(30), job.release):
        with pytest.raises(spool.NotLeased) as e:
            call()
        assert str(e.value) == "j1: not leased: the job is in dead/"
        assert (e.value.id, e.value.state) == ("j1", "dead")
    assert files(sp.path, "dead") == ["j1"]
    # As spool-finish says it for the same job.
    assert command("spool-finish", "-d", sp.path, "j1", "1", "ok") == \
        (1, "", "spool-finish: j1: not leased: the job is in dead/\n")


def test_below_the_reserve_an_enqueue_is_a_temporary_error(sp):
    with open(os.path.join(sp.path, "config"), "a") as f:
        f.write("reserve=1000T\n")
    with spool.Spool(sp.path) as low:
        with pytest.raises(spool.TemporaryError) as e:
            low.enqueue(b"x", id="j1")
    assert isinstance(e.value, OSError) and e.value.errno == errno.EDQUOT
    # spool-enqueue's words and figures.
    assert re.fullmatch(
        r"free space is below the spool's reserve: [0-9.]+[KMGTPE]? free, "
        r"reserve 1000T \(see reserve and reserve-inodes in spool\(7\)\)",
        e.value.strerror), e.value.strerror
    assert files(sp.path, "new") == [] and files(sp.path, "tmp") == []


def test_with_job_finishes_by_how_the_block_ends(sp):
    for i in (1, 2, 3, 4):
        sp.enqueue(b"x", id="j%d" % i)
    jobs = {j.id: j for j in sp.claim(lease=30, n=4)}
    with jobs["j1"]:
        pass
    with jobs["j2"]:
        raise spool.Retry(delay=3600, cls="rate-limited")
    with jobs["j3"]:
        raise spool.Permanent(cls="invalid-input", detail="no such user")
    with pytest.raises(KeyError):
        with jobs["j4"]:
            raise KeyError("boom")
    assert files(sp.path, "done") == ["j1"]
    assert files(sp.path, "dead") == ["j3"]
    assert sorted(f.split(",")[0] for f in files(sp.path, "new")) == \
        ["j2", "j4"]
    meta = open(os.path.join(sp.path, "meta", "j4")).read()
    assert " out=retry cls=crashed detail=KeyError:%20'boom'\n" in meta


def test_bad_arguments_raise_and_leave_the_spool_alone(sp):
    before = sorted(os.listdir(sp.path))
    with pytest.raises(spool.InvalidArgument):
        sp.enqueue(b"x", delay=-1)
    with pytest.raises(TypeError):
        sp.enqueue(12)
    with pytest.raises(spool.InvalidArgument):
        sp.enqueue(b"x", max_attempts=0)
    with pytest.raises(spool.InvalidArgument) as e:
        sp.enqueue(b"x", id="-bad")
    assert str(e.value) == ("id: bad value (letters, digits, '.', '_', "
                            "'-', starting with a letter or digit, at most "
                            "128 bytes)")
    assert sorted(os.listdir(sp.path)) == before
    assert files(sp.path, "new") == []


def test_jobs_stops_when_nothing_is_due_and_waits_when_told(sp):
    assert list(sp.jobs(lease=30)) == []
    sp.enqueue(b"x", id="later", delay=0.3)
    got = [j.id for j in sp.jobs(lease=30, wait=5)]
    assert got == ["later"]


def inotify_fds():
    """This process's inotify descriptors."""
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + fd) == "anon_inode:inotify":
                fds.append(fd)
        except OSError:
            pass                # the listing's own descriptor
    return fds


def test_a_wait_sleeps_until_an_enqueue_on_this_host_wakes_it(sp):
    got = []

    def worker():
        for job in sp.jobs(lease=30, wait=600):
            got.append(job.id)
            break

    t = threading.Thread(target=worker, daemon=True)
    t.start()
    # Until the worker sleeps in poll(2), system call 7 on x86-64: an
    # event, not a time.  Its third argument is the timeout in ms: with
    # nothing due, the whole wait, not a second of looking.
    stat = "/proc/self/task/%d/syscall" % t.native_id
    call = []
    for _ in range(3000):
        with open(stat) as f:
            call = f.read().split()
        if call[0] == "7":
            break
        threading.Event().wait(0.01)
    assert call[0] == "7" and int(call[3], 16) > 500000
    assert len(inotify_fds()) == 1
    out = subprocess.run([os.path.join(BIN, "spool-enqueue"), "-d", sp.path,
                          "--id", "woken"], input=b"x", capture_output=True)
    assert (out.returncode, out.stderr) == (0, b"")
    t.join(60)
    assert not t.is_alive()
    assert got == ["woken"]
    assert inotify_fds() == []
    assert files(sp.path, "leased") == ["woken,1"]


def test_the_commands_see_what_python_did(sp):
    sp.enqueue(b"x", id="j1")
    out = subprocess.run([os.path.join(BIN, "spool-ls"), "-d", sp.path,
                          "new"], capture_output=True, text=True)
    assert (out.returncode, out.stdout, out.stderr) == (0, "j1\n", "")


def test_eight_threads_on_one_spool_do_each_job_once(sp):
    ids = sp.enqueue_many([(b"x", {"id": "j%03d" % i}) for i in range(200)])
    assert ids == ["j%03d" % i for i in range(200)]
    done, lock = [], threading.Lock()

    def work():
        for job in sp.jobs(lease=30):
            job.ok()
            with lock:
                done.append(job.id)
    ts = [threading.Thread(target=work) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert sorted(done) == ids
    assert files(sp.path, "done") == ids


def test_four_processes_with_a_spool_each_do_each_job_once(tmp_path):
    path = str(tmp_path / "spool")
    spool.init(path)
    with spool.Spool(path) as s:
        s.enqueue_many([(b"x", {"id": "j%03d" % i}) for i in range(200)])
    out = tmp_path / "out"
    code = ("import spool, sys\n"
            "with spool.Spool(sys.argv[1]) as sp, open(sys.argv[2], 'a') as f:\n"
            "    for job in sp.jobs(lease=30):\n"
            "        job.ok()\n"
            "        print(job.id, file=f, flush=True)\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python"))
    ps = [subprocess.Popen([sys.executable, "-c", code, path,
                            str(out) + str(k)], env=env) for k in range(4)]
    assert [p.wait() for p in ps] == [0, 0, 0, 0]
    got = sorted(l for k in range(4)
                 for l in (tmp_path / ("out" + str(k))).read_text().split())
    assert got == ["j%03d" % i for i in range(200)]


def lock_lines(path):
    """/proc/locks's lines for PATH's file, by its device and inode: the
    locks of other tests do not count."""
    st = os.stat(path)
    me = " %02x:%02x:%d " % (os.major(st.st_dev), os.minor(st.st_dev),
                             st.st_ino)
    return [l for l in open("/proc/locks") if me in l]


def test_a_call_that_waits_for_a_lock_lets_other_threads_run(sp):
    sp.enqueue(b"x", id="j1")
    [job] = sp.claim(lease=30)
    meta = os.path.join(sp.path, "meta", "j1")
    holder = subprocess.Popen(["flock", meta, "sleep", "1"])
    while not lock_lines(meta):
        pass
    t = threading.Thread(target=job.ok)
    t.start()
    # This thread sees the finish wait for the lock: it runs meanwhile.
    seen = False
    while t.is_alive() and not seen:
        seen = any("->" in l for l in lock_lines(meta))
    holder.wait()
    t.join()
    assert seen
    assert files(sp.path, "done") == ["j1"]


def test_a_forked_child_uses_its_parents_spool(sp):
    sp.enqueue(b"x", id="j1")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            [job] = sp.claim(lease=30)
            job.ok()
            os.write(w, job.id.encode())
        finally:
            os._exit(0)
    os.close(w)
    assert os.read(r, 100) == b"j1"
    assert os.waitpid(pid, 0)[1] == 0
    assert files(sp.path, "done") == ["j1"]


def test_a_429_is_retried_with_its_delay_and_its_id(sp):
    sp.enqueue(b"post", id="hook-7")
    [job] = sp.claim(lease=30)
    job.retry(delay=0.2, cls="rate-limited", detail="429")
    assert sp.claim(lease=30) == []
    [again] = list(sp.jobs(lease=30, wait=5))
    assert (again.id, again.attempt, again.token) == ("hook-7", 2, 2)
    again.ok()


def test_a_stopped_worker_loses_its_job_and_its_finish_is_refused(sp):
    sp.enqueue(b"x", id="j1")
    code = ("import os, signal, spool, sys\n"
            "with spool.Spool(sys.argv[1]) as sp:\n"
            "    [job] = sp.claim(lease=0.2)\n"
            "    print(job.token, flush=True)\n"
            "    os.kill(os.getpid(), signal.SIGSTOP)\n"
            "    try:\n"
            "        job.ok()\n"
            "    except spool.StaleToken as e:\n"
            "        print(type(e).__name__, e.token, flush=True)\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python"))
    p = subprocess.Popen([sys.executable, "-c", code, sp.path], env=env,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "1\n"
    while open("/proc/%d/stat" % p.pid).read().split(") ")[1][0] != "T":
        pass
    [new] = list(sp.jobs(lease=30, wait=5))
    assert (new.id, new.token, new.attempt) == ("j1", 2, 2)
    p.send_signal(signal.SIGCONT)
    assert p.stdout.read() == "StaleToken 2\n"
    assert p.wait() == 0
    new.ok()
    assert files(sp.path, "done") == ["j1"]


def test_keyboard_interrupt_ends_a_wait(sp):
    def interrupt():
        threading.Event().wait(0.3)
        os.kill(os.getpid(), signal.SIGINT)
    # As a program started from a terminal has it: a test runner started
    # in the background of a script inherits SIGINT ignored.
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt).start()
        with pytest.raises(KeyboardInterrupt):
            list(sp.jobs(lease=30, wait=30))
    finally:
        signal.signal(signal.SIGINT, old)


def test_a_refused_call_leaves_no_descriptor_open_and_nothing_queued(sp):
    before = sorted(os.listdir("/proc/self/fd"))
    for call in (
            lambda: sp.enqueue_many([b"a", b"b", (b"c", {"key": "a b"})]),
            lambda: sp.enqueue(b"x", delay=-1),
            lambda: sp.enqueue(b"x", deadline=0),
            lambda: sp.enqueue(b"x", deadline=float("inf")),
            lambda: sp.enqueue(b"x", deadline=10 ** 20),
            lambda: sp.claim(lease=0),
            lambda: sp.claim(lease=30, n=257)):
        with pytest.raises(spool.InvalidArgument):
            call()
    assert sorted(os.listdir("/proc/self/fd")) == before
    assert files(sp.path, "new") == []


def test_a_bad_item_after_a_batch_keeps_the_batch_and_says_so(sp):
    items = [(b"x", {"id": "j%03d" % i}) for i in range(300)]
    items[299] = (b"x", {"id": "j299", "key": "a b"})
    before = sorted(os.listdir("/proc/self/fd"))
    with pytest.raises(spool.InvalidArgument) as e:
        sp.enqueue_many(items)
    # The first 256 are published, and named; the rest are not.
    assert e.value.results == ["j%03d" % i for i in range(256)]
    assert [f.split(",")[0] for f in files(sp.path, "new")] == [
        "j%03d" % i for i in range(256)]
    assert sorted(os.listdir("/proc/self/fd")) == before


def command(*args):
    """A command of tests/bin: (status, stdout, stderr)."""
    out = subprocess.run([os.path.join(BIN, args[0])] + list(args[1:]),
                         capture_output=True, text=True)
    return out.returncode, out.stdout, out.stderr


def test_the_relayer_three_parked_each_redriven_by_hand(sp):
    """Three jobs park for three reasons.  An operator redrives each by
    hand; only the one that was not sent is sent again."""
    sent = []
    up = False

    def relay():
        for job in sp.jobs(lease=30):
            try:
                with job:
                    what = job.payload.decode()
                    if what == "no such customer":
                        raise spool.Permanent(cls="invalid-input",
                                              detail=what)
                    if what == "upstream" and not up:
                        raise spool.Retry(delay=0, cls="dependency-down")
                    sent.append(job.id)
                    if what == "lost":
                        raise ConnectionResetError("lost after sending")
            except ConnectionResetError:
                pass            # finished as crashed; the next job

    sp.enqueue(b"no such customer", id="bad")
    sp.enqueue(b"upstream", id="down", max_attempts=2)
    sp.enqueue(b"lost", id="crash", max_attempts=1)
    relay()
    assert sent == ["crash"]
    assert files(sp.path, "dead") == ["bad", "crash", "down"]
    rc, out, err = command("spool-ls", "-d", sp.path, "--json", "dead")
    got = {j["id"]: (j["reason"], j["class"], j["side_effect"])
           for j in map(json.loads, out.splitlines())}
    assert (rc, err) == (0, "")
    assert got == {"bad": ("permanent", "invalid-input", False),
                   "down": ("exhausted", "dependency-down", False),
                   "crash": ("exhausted", "crashed", True)}
    # The upstream is back; the customer's record is fixed by hand.
    up = True
    with open(os.path.join(sp.path, "dead", "bad"), "wb") as f:
        f.write(b"fixed")
    by = ("--by", "ops", "--note", "INC-7")
    assert command("spool-redrive", "-d", sp.path, *by, "down") == \
        (0, "down\n", "")
    assert command("spool-redrive", "-d", sp.path, *by, "bad") == \
        (1, "", "spool-redrive: bad: its payload is not the one enqueued "
         "(changed by hand?): check it, then redrive with --edited to send "
         "it as it is\n")
    assert command("spool-redrive", "-d", sp.path, *by, "--edited",
                   "bad") == (0, "bad\n", "")
    # The crash may have sent its mail: it did, so it is dropped.
    assert command("spool-redrive", "-d", sp.path, *by, "crash") == \
        (1, "", "spool-redrive: crash: its side effect may have happened: "
         "reconcile it, then redrive with --reconciled\n")
    assert "crash" in sent
    assert command("spool-drop", "-d", sp.path, *by, "crash") == \
        (0, "crash\n", "")
    relay()
    assert sorted(sent) == ["bad", "crash", "down"]
    assert files(sp.path, "done") == ["bad", "crash", "down"]
    assert files(sp.path, "dead") == []
    # A second redrive finds nothing parked, and changes nothing.
    assert command("spool-redrive", "-d", sp.path, *by, "down") == \
        (1, "", "spool-redrive: down: not parked: the job is in done/\n")
    assert files(sp.path, "new") == []
