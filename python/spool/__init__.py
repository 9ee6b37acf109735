"""spool: a durable job queue that is a directory (spool(7)).

A producer enqueues; a worker claims, works and finishes::

    import spool

    with spool.Spool("/var/spool/mail-out") as sp:
        sp.enqueue(b"to=alice", id="order-1842")
        for job in sp.jobs(lease=30):
            with job:                   # ok, or crashed on an exception
                send(job.payload)

spool.work(path, handler, lease=30) is spool-run(1) in the process: a
handler per job, leases renewed, SIGTERM honoured, a log line a
delivery.  The operator's calls and readers are methods of Spool:
redrive, drop, cancel, purge, pause, resume, list, show, stat, fsck and
audit.

Every call is one of libspool's (libspool(3)), made with the GIL
released.  A Spool may be shared by threads: a lock lets one call in at
a time.  One Spool a thread is the fast way.  An asyncio program calls
them through asyncio.to_thread.

Errors: every exception derives from Error.  A refusal (Duplicate,
StaleToken, ...) names the job.  A failure a retry may mend is
TemporaryError, an OSError with its errno; one that only a person can
mend is PermanentError, also an OSError.  A bad argument raises
ValueError or TypeError, and the spool is untouched.
"""

from __future__ import annotations

import datetime
import errno
import json
import os
import select
import threading
import time
import weakref
from typing import (IO, Any, Callable, Dict, Iterable, Iterator, List,
                    NamedTuple, Optional, Tuple, Union)

from . import _spool as _spool

__all__ = [
    "AuditLine", "Changed", "Damaged", "Delivery", "Duplicate", "Edited",
    "Error", "Finding", "Fsck", "init", "InvalidArgument", "Job", "JobInfo",
    "NoSuchJob", "NotDone", "NotLeased", "NotMissing", "NotParked",
    "NotQueued", "Permanent", "PermanentError", "Refused", "Retry", "Spool",
    "StaleToken", "TemporaryError", "Unreconciled", "work",
]

Duration = Union[int, float, datetime.timedelta]
Payload = Union[bytes, str, "os.PathLike[str]", IO[bytes]]

CLASSES = ("transient", "rate-limited", "dependency-down", "invalid-input",
           "permission", "cancelled", "unknown-side-effect", "crashed",
           "timeout", "lease-expired")


class Error(Exception):
    """What every exception of spool derives from."""


class Refused(Error):
    """The library refused an item (lib/spool.h, enum spool_refusal).

    id is the job's ID; state, where the job is, if it is anywhere;
    token, its current token."""

    def __init__(self, id: str, message: str, state: Optional[str] = None,
                 token: int = 0) -> None:
        super().__init__("%s: %s" % (id, message))
        self.id = id
        self.state = state
        self.token = token


class Duplicate(Refused):
    """enqueue: the ID is queued, leased or parked."""


class NoSuchJob(Refused):
    """No job has this ID."""


class StaleToken(Refused):
    """The token is not the job's current one: its lease was taken over."""


class NotLeased(Refused):
    """finish or renew: the job is not leased."""


class NotParked(Refused):
    """redrive: the job is not in dead/."""


class Unreconciled(Refused):
    """redrive: its side effect may have happened; reconcile it first."""


class NotQueued(Refused):
    """cancel: the job is not in new/ or leased/."""


class NotDone(Refused):
    """purge: the job is not in done/."""


class Changed(Refused):
    """The job moved after it was selected."""


class Edited(Refused):
    """redrive: its payload is not the one recorded."""


class NotMissing(Refused):
    """purge of a missing job: its file is there."""


# enum spool_refusal, in order (SPOOL_NO_NONE first).
_REFUSALS = (None, Duplicate, NoSuchJob, StaleToken, NotLeased, NotParked,
             Unreconciled, NotQueued, NotDone, Changed, Edited, NotMissing)


class TemporaryError(Error, OSError):
    """A failure a retry may mend: what the commands exit 111 for.

    changed is True when the item's transition took effect but was not
    made durable: retrying is safe."""

    changed = False


class PermanentError(Error, OSError):
    """A failure no retry mends: what the commands exit 100 for."""


class Damaged(PermanentError):
    """The job's file or sidecar is not where it should be: run
    spool-fsck --repair."""


class InvalidArgument(Error, ValueError):
    """A value the library refuses: the spool is untouched."""


class Retry(Exception):
    """Raised in ``with job:``: finish the job as a retry."""

    def __init__(self, delay: Optional[Duration] = None,
                 cls: str = "transient", detail: Optional[str] = None):
        _class(cls)
        _ms("delay", delay, 0, zero_ok=True)
        super().__init__(_text("detail", detail) or cls)
        self.delay, self.cls, self.detail = delay, cls, detail


class Permanent(Exception):
    """Raised in ``with job:``: park the job, outcome permanent."""

    def __init__(self, cls: Optional[str] = None,
                 detail: Optional[str] = None):
        _class(cls)
        super().__init__(_text("detail", detail) or cls or "permanent")
        self.cls, self.detail = cls, detail


def _text(what: str, s: Optional[str]) -> Optional[str]:
    if s is not None and not isinstance(s, str):
        raise TypeError("%s: a str, not %s" % (what, type(s).__name__))
    return s


_MS_MAX = 100 * 365 * 86400 * 1000     # a century: more is a mistake


def _ms(what: str, d: Optional[Duration], default: int,
        zero_ok: bool = False) -> int:
    """d in milliseconds, as the commands take a DUR: more than 0 unless
    zero_ok, at most a century; default if d is None."""
    if d is None:
        return default
    if isinstance(d, datetime.timedelta):
        d = d.total_seconds()
    if isinstance(d, bool) or not isinstance(d, (int, float)):
        raise TypeError("%s: a duration is seconds or a timedelta, not %s"
                        % (what, type(d).__name__))
    ms = round(d * 1000) if d == d and abs(d) < 1e15 else -1
    if ms < 0 or ms > _MS_MAX or (ms == 0 and not zero_ok):
        raise InvalidArgument("%s: bad duration %r (seconds, %s)" % (
            what, d, "0 or more" if zero_ok else "1 ms or more"))
    return int(ms)


def _word(what: str, kind: str, s: Optional[str]) -> Optional[str]:
    """s, if None or valid as lib/spool.h's spool_valid_KIND says; the
    commands' words for the rule otherwise."""
    if s is None:
        return None
    if not isinstance(s, str):
        raise TypeError("%s: a str, not %s" % (what, type(s).__name__))
    if "\0" not in s and _spool.valid(kind, s):
        return s
    if kind == "note":
        raise InvalidArgument("%s: bad value (printable text, 1 to 128 "
                              "bytes, not '-')" % what)
    raise InvalidArgument(
        "%s: bad value (letters, digits, '.', '_', '-'%s, starting with a "
        "letter or digit, at most %d bytes)" % (
            what, ", ':', '@'" if kind == "owner" else "",
            64 if kind == "key" else 128))


def _who(by: Optional[str], note: Optional[str],
         need: bool) -> Tuple[Optional[str], Optional[str]]:
    """Who and why: both, or where need is False neither; the commands'
    words for what is missing otherwise."""
    _word("by", "note", by)
    _word("note", "note", note)
    if (by is None or note is None) and (need or by is not None or
                                         note is not None):
        raise InvalidArgument("by and note %s; missing: %s" % (
            "are needed" if need else "go together",
            "by and note" if by is None and note is None else
            "by" if by is None else "note"))
    return by, note


def _class(cls: Optional[str]) -> int:
    if cls is None:
        return 0
    c = _spool.class_from_name(cls)
    if c <= 0:
        raise InvalidArgument("bad class '%s' (%s)"
                              % (cls, ", ".join(CLASSES)))
    return int(c)


def _os_error(e: OSError, when: int) -> Error:
    status = _spool.error(e.errno or 0, when)[0]
    kind = TemporaryError if status == 111 else PermanentError
    return kind(e.errno, e.strerror, e.filename)


def _failed(id: str, r: _spool.Result) -> Error:
    """The exception for an item's result that is not done, in the words
    a command prints for it (spool_result_text in lib/spool.h)."""
    status, refusal, err, changed, state, token, _, line = r
    words = (line or "")[len(id) + 2:]
    if status == 1:
        cls = _REFUSALS[refusal] if refusal < len(_REFUSALS) else Refused
        return (cls or Refused)(id, words, _spool.name("state", state),
                                token)
    if err in (errno.EINVAL, errno.ERANGE):
        return InvalidArgument(line)
    if _spool.error(err, _spool.AT_CALL)[0] == 100:
        return (Damaged if err == errno.EUCLEAN else PermanentError)(
            err, words, id)
    t = TemporaryError(err, words, id)
    t.changed = bool(changed)
    return t


def init(path: Union[str, "os.PathLike[str]"],
         group: Optional[str] = None) -> None:
    """Make a spool at path, as spool-init(1) does; a spool already
    complete is left as it is."""
    try:
        _spool.init(os.fspath(path), group)
    except OSError as e:
        raise _os_error(e, _spool.AT_INIT) from None


class Delivery(NamedTuple):
    """One delivery of a job: a claim and how it ended (spool-show(1)).
    end is "ok", "retry", "permanent", "release", "expired", "parked",
    "cancelled", or None while it is under its lease."""
    cycle: int
    attempt: int
    token: int
    owner: Optional[str]
    claimed_ms: int
    ended_ms: int
    end: Optional[str]
    cls: Optional[str]
    detail: Optional[str]


class JobInfo(NamedTuple):
    """What a job's sidecar says of it, as spool-show(1) shows it.  Times
    are ms since the epoch, 0 where there is none.  damage is None, or
    what a hand did: "missing" (the file is not where its record says),
    "unreadable" or "sidecar" (a record cannot be read).  deliveries is
    every delivery of every cycle from show(), None from list()."""
    id: str
    state: str
    file: Optional[str]
    since_ms: int
    created_ms: int
    deadline_ms: int
    eligible_ms: int
    lease_until_ms: int
    trace: Optional[str]
    key: Optional[str]
    owner: Optional[str]
    token: int
    attempts: int
    max_attempts: int
    cycles: int
    reason: Optional[str]
    cls: Optional[str]
    detail: Optional[str]
    side_effect: bool
    redriven: bool
    dropped: bool
    by: Optional[str]
    note: Optional[str]
    acted_ms: int
    payload_size: int
    payload_xxh3: int
    payload_resized: bool
    damage: Optional[str]
    deliveries: Optional[List[Delivery]]


_DAMAGE = (None, "missing", "unreadable", "sidecar")
_REASONS = ("permanent", "exhausted", "deadline", "side-effect", "cancelled")
_STATES = ("new", "leased", "done", "dead")


def _info(t: Any) -> JobInfo:
    v = list(t)
    for k in (18, 19, 20, 26):
        v[k] = bool(v[k])
    v[27] = _DAMAGE[v[27]] if 0 <= v[27] < len(_DAMAGE) else "sidecar"
    if v[28] is not None:
        v[28] = [Delivery(*d) for d in v[28]]
    return JobInfo(*v)


class Finding(NamedTuple):
    """One thing spool-fsck(1) says: what (a job ID or a path), the
    problem in its words, and said: "fault" (left as it is), "fixed"
    (repaired) or "note" (no fault, worth a look)."""
    what: Optional[str]
    problem: Optional[str]
    said: str


class Fsck(NamedTuple):
    """spool-fsck's answer: consistent (after repair, if asked) and what
    it found."""
    consistent: bool
    findings: List[Finding]


class AuditLine(NamedTuple):
    """One line of the audit log (spool(7), "The audit log"), parsed.  A "-"
    in the line is None here.  note is the operator's note, or for a
    claim the token it superseded; writer is HOST:PID."""
    time_ms: int
    event: str
    id: Optional[str]
    token: int
    attempt: int
    cycle: int
    actor: Optional[str]
    reason: Optional[str]
    cls: Optional[str]
    note: Optional[str]
    writer: str

    @property
    def time(self) -> datetime.datetime:
        """time_ms as an aware datetime in UTC."""
        return datetime.datetime.fromtimestamp(self.time_ms / 1000,
                                               datetime.timezone.utc)


class Spool:
    """An open spool.  A context manager; close() ends it."""

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        try:
            self._h = _spool.open(self.path)
        except OSError as e:
            raise _os_error(e, _spool.AT_OPEN) from None
        _forked.add(self)

    def _fresh_lock(self) -> None:
        self._lock = threading.Lock()

    def close(self) -> None:
        """Let the spool go.  Calls after it raise ValueError."""
        with self._lock:
            self._h.close()

    def __enter__(self) -> "Spool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        with self._lock:
            try:
                return fn(*args)
            except OSError as e:
                raise _os_error(e, _spool.AT_CALL) from None

    def enqueue(self, payload: Payload, *, id: Optional[str] = None,
                key: Optional[str] = None, delay: Optional[Duration] = None,
                deadline: Optional[Duration] = None,
                max_attempts: Optional[int] = None,
                trace: Optional[str] = None) -> str:
        """Publish one job; its ID.  payload is bytes, str (UTF-8), a
        binary file or a path.  Durations are seconds or timedeltas."""
        r = self.enqueue_many([(payload, dict(
            id=id, key=key, delay=delay, deadline=deadline,
            max_attempts=max_attempts, trace=trace))])[0]
        if isinstance(r, Error):
            raise r
        return r

    def enqueue_many(self, items: Iterable[object]) -> List[Union[str,
                                                                 Error]]:
        """Publish many jobs, 256 a wait: an item is a payload or a pair
        (payload, options).  One result a job: its ID, or the exception
        that refused it.  A bad item, or a failed wait, raises as
        enqueue does, and its batch is not published.  The batches before
        it are: the exception's results attribute holds their results."""
        out: List[Union[str, Error]] = []
        batch: List[Tuple[_spool.JobIn, Optional[str]]] = []
        try:
            for item in items:
                if isinstance(item, tuple):
                    payload, opts = item
                else:
                    payload, opts = item, {}
                batch.append(_job(payload, **opts))
                if len(batch) == _spool.BATCH_MAX:
                    out += self._enqueue(batch)
            if batch:
                out += self._enqueue(batch)
        except Exception as e:
            for b in batch:
                os.close(b[0][0])
            setattr(e, "results", out)
            raise
        except BaseException:
            for b in batch:
                os.close(b[0][0])
            raise
        return out

    def _enqueue(self, batch: List[Tuple[_spool.JobIn, Optional[str]]]
                 ) -> List[Union[str, Error]]:
        try:
            res = self._call(self._h.enqueue, [b[0] for b in batch])
            return [i if r[0] == 0 else _failed(b[1] or i, r)
                    for (i, r), b in zip(res, batch)]
        finally:
            for b in batch:
                os.close(b[0][0])
            batch.clear()

    def claim(self, *, lease: Duration, n: int = 1,
              owner: Optional[str] = None) -> List["Job"]:
        """Lease up to n due jobs; empty when nothing is due or the spool
        is paused (paused() tells which)."""
        if isinstance(n, bool) or not isinstance(n, int) or \
                not 1 <= n <= _spool.BATCH_MAX:
            raise InvalidArgument("n: bad number %r (1 to %d)"
                                  % (n, _spool.BATCH_MAX))
        got = self._call(self._h.claim, n, _ms("lease", lease, 0),
                         _word("owner", "owner", owner))
        return [Job(self, *g) for g in got]

    def redrive(self, ids: Iterable[str], *, by: str, note: str,
                reconciled: bool = False, edited: bool = False
                ) -> List[Union[str, Error]]:
        """Put parked jobs back in new/ for a new cycle, as
        spool-redrive(1) does: who (by) and why (note) are recorded.  A
        job that may have had its side effect needs reconciled=True; one
        whose payload was changed by hand, edited=True.  One result an
        ID, in order: the ID, or the exception that refused it."""
        return self._operate(0, ids, by, note, reconciled, edited)

    def drop(self, ids: Iterable[str], *, by: str, note: str
             ) -> List[Union[str, Error]]:
        """End parked jobs without running them, as spool-drop(1) does:
        each goes to done/, marked dropped.  Results as redrive()'s."""
        return self._operate(1, ids, by, note)

    def cancel(self, ids: Iterable[str], *, by: str, note: str
               ) -> List[Union[str, Error]]:
        """Park queued or leased jobs at once, as spool-cancel(1) does; a
        leased one's holder can no longer finish it.  Results as
        redrive()'s."""
        return self._operate(2, ids, by, note)

    def purge(self, state: str, ids: Iterable[str], *,
              by: Optional[str] = None, note: Optional[str] = None
              ) -> List[Union[str, Error]]:
        """Remove jobs for good, as spool-purge(1) does: state "done",
        "dead" (by and note needed) or "missing" (jobs whose file a
        person removed by hand; by and note needed).  Results as
        redrive()'s."""
        states = {"done": _spool.DONE, "dead": _spool.DEAD,
                  "missing": _spool.ABSENT}
        if state not in states:
            raise InvalidArgument("state: bad value '%s' (done, dead or "
                                  "missing)" % state)
        return self._operate(3, ids, by, note, need=state != "done",
                             state=states[state])

    def pause(self, *, by: Optional[str] = None,
              note: Optional[str] = None) -> None:
        """Stop claims, as spool-pause(1) does: producers go on, claims
        find nothing until resume().  by and note go together."""
        self._call(self._h.pause, True, *_who(by, note, False))

    def resume(self, *, by: Optional[str] = None,
               note: Optional[str] = None) -> None:
        """Let claims go on again, as spool-resume(1) does."""
        self._call(self._h.pause, False, *_who(by, note, False))

    def audit(self, id: Optional[str] = None) -> Iterator[AuditLine]:
        """The audit log's lines, every host's and the rotated files', in
        time order; with id, that job's alone.  A line that is not an
        audit line is skipped, as every reader skips it.  It reads the
        whole log before the first line, to put the hosts' in order."""
        _word("id", "id", id)
        lines = [AuditLine(*t) for t in self._call(self._h.audit)
                 if id is None or t[2] == id]
        lines.sort(key=lambda a: a.time_ms)
        return iter(lines)

    def show(self, id: str) -> JobInfo:
        """What the job's sidecar says, with every delivery, as
        spool-show(1) shows it.  NoSuchJob if there is none; a job a hand
        damaged is shown all the same, its damage named."""
        _word("id", "id", id)
        t = self._call(self._h.show, id)
        if t is None:
            raise NoSuchJob(id, "no such job")
        return _info(t)

    def list(self, state: str = "dead", *, cls: Optional[str] = None,
             reason: Optional[str] = None,
             older_than: Optional[Duration] = None,
             key: Optional[str] = None,
             trace: Optional[str] = None) -> Iterator[JobInfo]:
        """The jobs in state ("new", "leased", "done", "dead", or
        "dropped", the done jobs that were dropped), as spool-ls(1)
        reads them: without waiting for a lock, maybe a moment old.  The
        options select as spool-ls's do: cls, the last failure's class;
        reason, why it parked; older_than, in its state for at least
        that long; key and trace, the job's.  Sorted by ID, in byte
        order, as spool-ls -l sorts them."""
        _word("key", "key", key)
        _word("trace", "id", trace)
        if state not in _STATES + ("dropped",):
            raise InvalidArgument("state: bad value '%s' (new, leased, "
                                  "done, dropped or dead)" % state)
        if cls is not None:
            _class(cls)
        if reason is not None and state in ("new", "leased"):
            raise InvalidArgument("reason is for dead, done and dropped "
                                  "jobs")
        if reason is not None and reason not in _REASONS:
            raise InvalidArgument("reason: bad value '%s' (%s)"
                                  % (reason, ", ".join(_REASONS)))
        age = None if older_than is None else \
            _ms("older_than", older_than, 0, zero_ok=True)
        code = _STATES.index("done" if state == "dropped" else state) + 1
        now = int(time.time() * 1000)
        infos = sorted((_info(t) for t in self._call(self._h.list, code)),
                       key=lambda i: i.id.encode())
        return iter([i for i in infos
                     if (state != "dropped" or i.dropped) and
                     (cls is None or i.cls == cls) and
                     (reason is None or i.reason == reason) and
                     (age is None or now - i.since_ms >= age) and
                     (key is None or i.key == key) and
                     (trace is None or i.trace == trace)])

    def stat(self) -> Dict[str, Any]:
        """What spool-stat --json prints, key for key, as a dict: jobs by
        state, parked jobs by reason and class, ages in ms, audit events,
        keys with a limit or a rate, the last operator action
        (spool-stat(1), --json).  It reads no payload."""
        out: Dict[str, Any] = json.loads(self._call(self._h.stat))
        return out

    def fsck(self, *, repair: bool = False, verify: bool = False,
             restored: bool = False) -> Fsck:
        """Check every invariant of the layout, as spool-fsck(1) does,
        beside live workers.  repair completes or rolls back what crashes
        left; verify reads every payload against its checksum; restored,
        with repair, is for a spool brought back from a backup."""
        if restored and not repair:
            raise InvalidArgument("restored needs repair")
        flags = (_spool.FSCK_REPAIR if repair else 0) | \
            (_spool.FSCK_VERIFY if verify else 0) | \
            (_spool.FSCK_RESTORED if restored else 0)
        rv, found = self._call(self._h.fsck, flags)
        said = ("fault", "fixed", "note")
        return Fsck(rv == 0, [Finding(w, p, said[k] if 0 <= k < 3 else
                                      "fault") for w, p, k in found])

    def _operate(self, verb: int, ids: Iterable[str], by: Optional[str],
                 note: Optional[str], reconciled: bool = False,
                 edited: bool = False, need: bool = True,
                 state: int = 0) -> List[Union[str, Error]]:
        if isinstance(ids, (str, bytes)):
            raise TypeError("ids: a list of IDs, not one string")
        who = _who(by, note, need)
        todo = [_word("id", "id", i) or "" for i in ids]
        out: List[Union[str, Error]] = []
        for k in range(0, len(todo), _spool.BATCH_MAX):
            part = todo[k:k + _spool.BATCH_MAX]
            res = self._call(self._h.operate, verb, who[0], who[1],
                             bool(reconciled), bool(edited), state, part)
            out += [i if r[0] == 0 else _failed(i, r)
                    for i, r in zip(part, res)]
        return out

    def paused(self) -> bool:
        """Whether spool-pause(1) paused the spool."""
        return bool(self._call(self._h.paused))

    def jobs(self, *, lease: Duration, owner: Optional[str] = None,
             wait: Optional[Duration] = None) -> Iterator["Job"]:
        """Claimed jobs, one at a time.  With wait None, it stops when
        nothing is due, as spool-claim exits 1.  With wait=S it waits up
        to S seconds for the next due job, as spool-run(1) waits: until
        the next job is due, or a transition on this host appends an audit
        line.  Without inotify(7) it looks every second.  A job enqueued
        on another host of a shared spool wakes nothing: it is seen at the
        next due time this host knew of, or not before wait ends, as
        spool-run(1), CAVEATS, says."""
        limit = None if wait is None else \
            time.monotonic() + _ms("wait", wait, 0, zero_ok=True) / 1000
        # The watch is made before the first claim: what is enqueued after
        # any claim wakes the next wait.
        fd = None if limit is None else _watch(self.path)
        try:
            while True:
                claimed_at = time.time()
                got = self.claim(lease=lease, owner=owner)
                if got:
                    yield got[0]
                    continue
                if limit is None:
                    return
                left = limit - time.monotonic()
                if left <= 0:
                    return
                _wait(fd, min(left, self._until_due(fd, claimed_at)))
        finally:
            if fd is not None:
                os.close(fd)

    def _until_due(self, fd: Optional[int], claimed_at: float) -> float:
        # Seconds until a claim may find work, as spool-run(1) reckons.
        due = None if self.paused() else self._call(self._h.next_due)
        if due is None:
            pause = float("inf")    # only news: a resume is an audit line
        elif due / 1000 > claimed_at:
            # Not due when the claim looked; it may be by now.
            pause = max(0.0, due / 1000 - time.time())
        else:
            # Due, yet the claim found nothing: another process holds
            # the job this moment.  Look again in a second.
            pause = 1.0
        return pause if fd is not None else min(pause, 1.0)


def _watch(path: str) -> Optional[int]:
    try:
        return _spool.watch(path)
    except OSError:
        return None     # jobs() looks every second instead


def _wait(fd: Optional[int], seconds: float) -> None:
    # Until fd has news or the time is up; then read the news away.
    if fd is None:
        time.sleep(seconds)
        return
    p = select.poll()
    p.register(fd, select.POLLIN)
    # poll(2) takes an int of ms: a longer wait wakes once on the way.
    if p.poll(max(1, min(2 ** 31 - 1, int(seconds * 1000) + 1))):
        _drain(fd)


def _drain(fd: int) -> bytes:
    """What fd holds now, read away."""
    out = b""
    try:
        while True:
            got = os.read(fd, 4096)
            if not got:
                return out
            out += got
    except BlockingIOError:
        return out


def _job(payload: Payload, id: Optional[str] = None,
         key: Optional[str] = None, delay: Optional[Duration] = None,
         deadline: Optional[Duration] = None,
         max_attempts: Optional[int] = None,
         trace: Optional[str] = None) -> Tuple[_spool.JobIn, Optional[str]]:
    """The C tuple of one job, its payload open; and its ID as given.
    Every argument is checked before anything is opened."""
    _word("id", "id", id)
    _word("key", "key", key)
    _word("trace", "id", trace)
    if max_attempts is not None and (
            isinstance(max_attempts, bool) or
            not isinstance(max_attempts, int) or
            not 1 <= max_attempts <= 1000000):
        raise InvalidArgument("max_attempts: bad number %r (1 to 1000000)"
                              % (max_attempts,))
    deadline_ms = _ms("deadline", deadline, 0)
    delay_ms = _ms("delay", delay, 0, zero_ok=True)
    if isinstance(payload, str):
        payload = payload.encode()
    if isinstance(payload, (bytes, bytearray, memoryview)):
        fd = _memfd(bytes(payload))
    elif isinstance(payload, os.PathLike):
        fd = os.open(os.fspath(payload), os.O_RDONLY | os.O_CLOEXEC)
    elif hasattr(payload, "fileno"):
        fd = os.dup(payload.fileno())
    else:
        raise TypeError("payload: bytes, str, a binary file or a path, "
                        "not %s" % type(payload).__name__)
    return ((fd, id, key, trace, max_attempts or 0, deadline_ms, delay_ms),
            id)


def _memfd(data: bytes) -> int:
    """A file in memory holding data, read from its start."""
    fd = os.memfd_create("spool-payload", os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _no_gate(job: "Job", on: bool) -> None:
    job._finishing = on


class Job:
    """A claimed job.  ``with job:`` finishes it ok when the block ends
    cleanly; on an exception, as a crash (class crashed).  Retry or
    Permanent raised in the block choose the outcome, and end there."""

    def __init__(self, sp: Spool, id: str, token: int, attempt: int,
                 cycle: int, lease_until: int, trace: str,
                 path: str) -> None:
        self._sp = sp
        self.id, self.token, self.attempt, self.cycle = \
            id, token, attempt, cycle
        self.lease_until = lease_until
        self.trace = trace or None
        self.path = path
        self.finished = self._finishing = False
        self.stopped: Optional[str] = None
        self._gate: Callable[[Job, bool], None] = _no_gate

    @property
    def cancelled(self) -> bool:
        """True once spool.work stopped this delivery: the job is no
        longer the handler's to finish.  stopped says why, in spool-run's
        words: cancelled, lost, timeout or shutdown."""
        return self.stopped is not None

    def __repr__(self) -> str:
        return "Job(%r, token=%d, attempt=%d)" % (self.id, self.token,
                                                  self.attempt)

    @property
    def payload(self) -> bytes:
        """The payload's bytes, read when asked."""
        with open(self.path, "rb") as f:
            return f.read()

    def open(self) -> IO[bytes]:
        """The payload, open for reading."""
        return open(self.path, "rb")

    def _finish(self, outcome: int, cls: int = 0,
                detail: Optional[str] = None, delay: int = 0) -> None:
        # spool.work's gate: its main thread leaves this job alone.
        self._gate(self, True)
        try:
            r = self._sp._call(self._sp._h.finish, [
                (self.id, self.token, outcome, cls, detail, delay)])[0]
        except BaseException:
            self._gate(self, False)
            raise
        if r[0] != 0:
            self._gate(self, False)
            raise _failed(self.id, r)
        self.finished = True

    def ok(self) -> None:
        """Done: the job moves to done/."""
        self._finish(_spool.OK)

    def retry(self, delay: Optional[Duration] = None,
              cls: str = "transient", detail: Optional[str] = None) -> None:
        """Deliver it again after delay (None: the spool's backoff); it
        parks if its attempts are spent."""
        self._finish(_spool.RETRY, _class(cls), detail,
                     _ms("delay", delay, -1, zero_ok=True))

    def fail(self, cls: Optional[str] = None,
             detail: Optional[str] = None) -> None:
        """Park it in dead/ at once: outcome permanent."""
        self._finish(_spool.PERMANENT, _class(cls), detail)

    def release(self, delay: Optional[Duration] = None) -> None:
        """Give it back unused: no attempt spent."""
        self._finish(_spool.RELEASE, 0, None,
                     _ms("delay", delay, 0, zero_ok=True))

    def renew(self, lease: Duration) -> None:
        """Hold the lease lease seconds from now."""
        r = self._sp._call(self._sp._h.renew, self.id, self.token,
                           _ms("lease", lease, 0))
        if r[0] != 0:
            raise _failed(self.id, r)

    def __enter__(self) -> "Job":
        return self

    def __exit__(self, et: object, ev: object, tb: object) -> bool:
        if self.finished:
            return False
        if ev is None:
            self.ok()
            return False
        if isinstance(ev, Retry):
            self.retry(ev.delay, ev.cls, ev.detail)
            return True
        if isinstance(ev, Permanent):
            self.fail(ev.cls, ev.detail)
            return True
        self.retry(None, "crashed", "%s: %s" % (type(ev).__name__, ev))
        return False


# A child forked while another thread held a Spool's lock would find it
# held for good: each Spool gets a fresh lock in the child (libspool(3),
# THREADS, lets the child use the handle between calls).
_forked: "weakref.WeakSet[Spool]" = weakref.WeakSet()


def _after_fork() -> None:
    for sp in list(_forked):
        sp._fresh_lock()


os.register_at_fork(after_in_child=_after_fork)

from ._work import work  # noqa: E402, it uses the names above
