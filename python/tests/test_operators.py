"""The operator's calls from Python: redrive, drop, cancel, purge, pause
and resume, with each command's rules for who and why, against the state
on disk and the audit log."""

import json
import os
import subprocess
import threading

import pytest

import spool

BY = dict(by="ops", note="INC-7")
BIN = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "bin")


def files(sp, state):
    """The IDs whose file is in STATE/: a name in new/ ends in ",TIME"."""
    out = []
    for _, _, fs in os.walk(os.path.join(sp.path, state)):
        out += [f.split(",")[0] for f in fs]
    return sorted(out)


def audit(sp):
    """Each audit line's event, ID, actor and note."""
    out = []
    for name in sorted(os.listdir(os.path.join(sp.path, "audit"))):
        with open(os.path.join(sp.path, "audit", name)) as f:
            for line in f:
                v = line.split()
                out.append((v[1], v[2], v[6], v[9]))
    return out


def parked(sp, id, cls=None):
    sp.enqueue(b"x", id=id)
    [job] = sp.claim(lease=30)
    job.fail(cls=cls)


def test_redrive_puts_a_parked_job_back_once_and_records_who(sp):
    parked(sp, "j1")
    assert sp.redrive(["j1"], **BY) == ["j1"]
    assert files(sp, "new") == ["j1"] and files(sp, "dead") == []
    assert audit(sp)[-1] == ("redrive", "j1", "ops", "INC-7")
    [again] = sp.redrive(["j1"], **BY)
    assert isinstance(again, spool.NotParked)
    assert str(again) == "j1: not parked: the job is in new/"
    assert files(sp, "new") == ["j1"]


def test_a_cancelled_lease_needs_reconciled_to_be_redriven(sp):
    sp.enqueue(b"x", id="j1")
    [job] = sp.claim(lease=30)
    assert sp.cancel(["j1"], **BY) == ["j1"]
    assert files(sp, "dead") == ["j1"]
    [r] = sp.redrive(["j1"], **BY)
    assert isinstance(r, spool.Unreconciled)
    assert str(r) == ("j1: its side effect may have happened: reconcile "
                      "it, then redrive with --reconciled")
    assert files(sp, "dead") == ["j1"]
    assert sp.redrive(["j1"], reconciled=True, **BY) == ["j1"]
    # The holder of the cancelled lease can no longer finish it.
    with pytest.raises(spool.NotLeased) as e:
        job.ok()
    assert str(e.value) == "j1: not leased: the job is in new/"


def test_drop_ends_a_parked_job_and_purge_removes_it(sp):
    parked(sp, "j1", "invalid-input")
    ok, nope = sp.drop(["j1", "nope"], **BY)
    assert ok == "j1" and isinstance(nope, spool.NoSuchJob)
    assert str(nope) == "nope: no such job"
    assert files(sp, "done") == ["j1"]
    with pytest.raises(spool.InvalidArgument) as e:
        sp.purge("dead", ["j1"])
    assert str(e.value) == "by and note are needed; missing: by and note"
    assert sp.purge("done", ["j1"]) == ["j1"]
    assert files(sp, "done") == []
    assert [a[0] for a in audit(sp)][-2:] == ["drop", "purge"]


def test_pause_holds_claims_until_resume(sp):
    sp.enqueue(b"x", id="j1")
    sp.pause(**BY)
    assert sp.paused() and sp.claim(lease=30) == []
    with pytest.raises(spool.InvalidArgument) as e:
        sp.resume(by="ops")
    assert str(e.value) == "by and note go together; missing: note"
    assert sp.paused()
    sp.resume()
    assert not sp.paused()
    assert [j.id for j in sp.claim(lease=30)] == ["j1"]


def test_bad_arguments_change_nothing(sp):
    parked(sp, "j1")
    before = audit(sp)
    with pytest.raises(spool.InvalidArgument) as e:
        sp.redrive(["j1"], by="ops", note="")
    assert str(e.value) == \
        "note: bad value (printable text, 1 to 128 bytes, not '-')"
    with pytest.raises(spool.InvalidArgument) as e:
        sp.drop(["../j1"], **BY)
    assert str(e.value).startswith("id: bad value (letters, digits")
    with pytest.raises(TypeError):
        sp.cancel("j1", **BY)
    with pytest.raises(spool.InvalidArgument) as e:
        sp.purge("leased", ["j1"], **BY)
    assert str(e.value) == "state: bad value 'leased' (done, dead or missing)"
    assert audit(sp) == before and files(sp, "dead") == ["j1"]


def test_audit_yields_every_line_in_order_and_a_job_alone(sp):
    parked(sp, "j1")
    sp.enqueue(b"y", id="j2")
    assert sp.redrive(["j1"], **BY) == ["j1"]
    lines = list(sp.audit())
    assert [(a.event, a.id) for a in lines] == [
        ("enqueue", "j1"), ("claim", "j1"), ("park", "j1"),
        ("enqueue", "j2"), ("redrive", "j1")]
    park, redrive = lines[2], lines[4]
    assert (park.token, park.attempt, park.cycle, park.reason, park.cls) == \
        (1, 1, 1, "permanent", None)
    assert (redrive.actor, redrive.note) == ("ops", "INC-7")
    assert redrive.writer.split(":")[0] == park.writer.split(":")[0]
    assert redrive.time.tzinfo is not None
    assert [a.event for a in sp.audit(id="j2")] == ["enqueue"]
    # A line someone wrote by hand is skipped.
    log = os.path.join(sp.path, "audit", os.listdir(
        os.path.join(sp.path, "audit"))[0])
    with open(log, "a") as f:
        f.write("not an audit line\n")
    assert len(list(sp.audit())) == 5


def test_show_has_the_history_and_list_selects_as_spool_ls(sp):
    parked(sp, "j1", "invalid-input")
    sp.enqueue(b"y", id="j2", key="mail", trace="run-1", delay=3600)
    parked(sp, "j3")
    info = sp.show("j1")
    assert (info.id, info.state, info.file, info.token, info.attempts,
            info.cycles, info.reason, info.cls, info.damage) == \
        ("j1", "dead", "j1", 1, 1, 1, "permanent", "invalid-input", None)
    [d] = info.deliveries
    assert (d.cycle, d.attempt, d.token, d.end, d.cls) == \
        (1, 1, 1, "permanent", "invalid-input")
    assert d.ended_ms >= d.claimed_ms > 0
    with pytest.raises(spool.NoSuchJob) as e:
        sp.show("nope")
    assert str(e.value) == "nope: no such job"
    assert [i.id for i in sp.list()] == ["j1", "j3"]
    assert [i.id for i in sp.list("dead", cls="invalid-input")] == ["j1"]
    assert [i.id for i in sp.list("dead", older_than=3600)] == []
    assert [(i.id, i.key, i.trace, i.deliveries) for i in
            sp.list("new", key="mail")] == [("j2", "mail", "run-1", None)]
    assert sp.drop(["j3"], **BY) == ["j3"]
    assert [i.id for i in sp.list("dropped")] == ["j3"]
    with pytest.raises(spool.InvalidArgument) as e:
        sp.list("new", reason="permanent")
    assert str(e.value) == "reason is for dead, done and dropped jobs"
    with pytest.raises(spool.InvalidArgument) as e:
        sp.list("gone")
    assert str(e.value) == \
        "state: bad value 'gone' (new, leased, done, dropped or dead)"


def test_fsck_finds_what_spool_fsck_finds_and_repairs_it(sp):
    assert sp.fsck() == spool.Fsck(True, [])
    parked(sp, "j1")
    os.rename(os.path.join(sp.path, "dead", "j1"),
              os.path.join(sp.path, "done", "j1"))
    got = sp.fsck()
    out = subprocess.run([os.path.join(BIN, "spool-fsck"), "-d", sp.path],
                         capture_output=True, text=True)
    assert out.returncode == 1 and not got.consistent
    assert ["%s: %s" % (f.what, f.problem) for f in got.findings] == \
        out.stdout.splitlines()
    assert {f.said for f in got.findings} == {"fault"}
    fixed = sp.fsck(repair=True)
    assert fixed.consistent and {f.said for f in fixed.findings} == {"fixed"}
    # A hand's move from dead/ to done/ is adopted as a drop.
    assert [(f.what, f.problem) for f in fixed.findings] == [
        ("j1", "moved by hand from dead/ to done/j1: adopted as a drop by "
         "hand")]
    assert files(sp, "done") == ["j1"] and sp.show("j1").dropped
    assert sp.fsck() == spool.Fsck(True, [])
    with pytest.raises(spool.InvalidArgument):
        sp.fsck(restored=True)


AGES = ("lag", "oldest_dead", "oldest_lease")


def test_stat_says_what_spool_stat_json_says_key_for_key(sp):
    with open(os.path.join(sp.path, "config"), "a") as f:
        f.write("limit.mail=1\n")
    parked(sp, "p1", cls="invalid-input")
    parked(sp, "p2")
    assert sp.redrive(["p2"], **BY) == ["p2"]
    sp.enqueue(b"x", id="m1", key="mail")
    assert sorted(j.id for j in sp.claim(lease=60, n=5)) == ["m1", "p2"]
    # Waiting: m2 at its key's limit, ready for a free worker; later not
    # yet due.  Every age is then above 0.
    sp.enqueue(b"x", id="m2", key="mail")
    sp.enqueue(b"x", id="ready")
    sp.enqueue(b"x", id="later", delay=3600)
    threading.Event().wait(0.01)
    sp.pause(**BY)
    before = sp.stat()
    out = subprocess.run([os.path.join(BIN, "spool-stat"), "-d", sp.path,
                          "--json"], capture_output=True, text=True,
                         check=True).stdout
    after = sp.stat()
    cmd = json.loads(out)
    assert list(before) == list(cmd)
    assert before["keys"]["mail"].keys() == cmd["keys"]["mail"].keys()
    # Ages grow while the three look: each within the interval.
    span = after["now"] - before["now"]
    w = "oldest_waiting_ms"
    for k in AGES:
        assert before[k] > 0 and 0 <= cmd[k] - before[k] <= span, k
    assert before["keys"]["mail"][w] > 0
    assert 0 <= cmd["keys"]["mail"][w] - before["keys"]["mail"][w] <= span
    for d in (before, cmd):
        for k in AGES + ("now",):
            d.pop(k)
        d["keys"]["mail"].pop(w)
    assert before == cmd
    assert (before["new"], before["leased"], before["dead"],
            before["paused"], before["dead_by_class"]["invalid-input"],
            before["redriven_queued"], before["last_action"]["event"]) == (
        3, 2, 1, True, 1, 1, "pause")
