"""spool.work: spool-run(1)'s worker, in this process.

The invariant: a delivery is finished once, by one thread, or not at all.
A worker thread finishes what its handler said, unless the main thread
stopped the delivery first: its lease lost or cancelled (nothing to
finish), its timeout or the end of the grace (the main thread retries or
releases it).  Which came first is decided under one lock, by the
delivery's ``stopped``.

Threads: ``concurrency`` workers, each with a Spool of its own, claim one
job at a time and run the handler; the finish of one job and the claim of
the next share one wait.  The main thread renews the leases, keeps the
timers, watches audit/ for news and takes the signals.
"""

from __future__ import annotations

import datetime
import logging
import os
import select
import signal
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _spool
from . import (Duration, Error, InvalidArgument, Job, Permanent, Retry,
               Spool, _class, _drain, _failed, _ms, _os_error, _watch,
               _word)

log = logging.getLogger("spool")

_RECHECK = 1.0      # seconds between looks when no news can come


class _Delivery:
    """A job a worker thread runs, as the main thread sees it."""

    def __init__(self, job: Job, lease_ms: int, timeout_ms: int,
                 claimed: float) -> None:
        now = time.monotonic()
        self.job = job
        self.started = now
        self.lease = lease_ms / 1000
        # Timed from just before the claim, as spool-run times it.
        self.expires = claimed + self.lease
        self.renew_at = claimed + max(self.lease / 3, 0.001)
        self.timeout_at = now + timeout_ms / 1000 if timeout_ms > 0 \
            else float("inf")
        self.ending = False     # its thread is finishing it


def _now() -> str:
    t = datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (
        t.microsecond // 1000)


def _where(r: Optional[_spool.Result]) -> str:
    # state=: where the job went, as spool-run(1), "The log", says.
    if r is None:
        return "-"
    if r[0] == 1:
        return "refused"
    if r[0] == -1:
        return "failed"
    reason = _spool.name("reason", r[6]) if r[6] else None
    return (_spool.name("state", r[4]) or "?") + (
        " reason=" + reason if reason else "")


def _log(d: _Delivery, exc: Optional[BaseException],
         f: Optional[_spool.FinishIn], r: Optional[_spool.Result],
         exc_info: bool = False) -> None:
    ran = time.monotonic() - d.started
    job = d.job
    level = logging.INFO if f is not None and f[2] == _spool.OK else \
        logging.WARNING
    if r is not None and r[0] != 0:
        level = logging.ERROR
    log.log(level,
            "%s %s token=%d attempt=%d exception=%s duration=%.3fs "
            "outcome=%s class=%s state=%s%s", _now(), job.id, job.token,
            job.attempt, type(exc).__name__ if exc is not None else "-",
            ran, _spool.name("outcome", f[2]) if f else "-",
            (_spool.name("class", f[3]) or "-") if f and f[3] else "-",
            _where(r), " stopped=" + job.stopped if job.stopped else "",
            exc_info=exc if exc_info and exc is not None else None)


def _decide(job: Job, exc: Optional[BaseException]) -> Optional[
        _spool.FinishIn]:
    """How a delivery ends, from how its handler ended: None if the
    handler finished the job itself."""
    if job.finished:
        return None
    if exc is None:
        return (job.id, job.token, _spool.OK, 0, None, 0)
    if isinstance(exc, Retry):
        return (job.id, job.token, _spool.RETRY, _class(exc.cls),
                exc.detail, _ms("delay", exc.delay, -1, zero_ok=True))
    if isinstance(exc, Permanent):
        return (job.id, job.token, _spool.PERMANENT, _class(exc.cls),
                exc.detail, 0)
    return (job.id, job.token, _spool.RETRY, _class("crashed"),
            _said(exc), -1)


def _said(exc: BaseException) -> str:
    # "TYPE: text", the detail of a crash; a text that fails is left out.
    try:
        return "%s: %s" % (type(exc).__name__, exc)
    except Exception:       # noqa: B902, its __str__ is the handler's
        return type(exc).__name__


class _Worker:

    def __init__(self, path: str, handler: Callable[[Job], Any],
                 concurrency: int, lease_ms: int, owner: Optional[str],
                 timeout_ms: int, grace: float, max_jobs: Optional[int],
                 idle_exit: Optional[float]) -> None:
        self.path, self.handler = path, handler
        self.concurrency, self.lease_ms, self.owner = \
            concurrency, lease_ms, owner
        self.timeout_ms, self.grace = timeout_ms, grace
        self.max_jobs, self.idle_exit = max_jobs, idle_exit
        self.cond = threading.Condition()
        # Under cond:
        self.running: Dict[Tuple[str, int], _Delivery] = {}
        self.started = 0            # deliveries claimed, or being claimed
        self.news = 0               # bumped when a claim may find work
        self.idle: Dict[int, int] = {}  # thread -> news its claim missed
        self.claimed_at = 0.0       # when the latest empty claim looked
        self.stopping = False
        self.grace_end = float("inf")
        self.error: Optional[BaseException] = None
        self.alive = 0
        self.last_busy = time.monotonic()
        # A byte here wakes the main thread: a delivery began or ended, a
        # thread went idle or ended.
        self.kick_r, self.kick_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.returned = False       # work has returned: the last thread
        #                             to end closes kick_w

    # The worker threads.

    def _may_claim(self) -> bool:
        return not self.stopping and (self.max_jobs is None or
                                      self.started < self.max_jobs)

    def _kick(self) -> None:
        try:
            os.write(self.kick_w, b".")
        except OSError:
            pass        # a wake-up is pending, or work has returned

    def _fail(self, e: BaseException) -> None:
        with self.cond:
            if self.error is None:
                self.error = e
            self._stop()
        self._kick()

    def _thread(self, me: int) -> None:
        try:
            with Spool(self.path) as sp:
                self._loop(sp, me)
        except BaseException as e:     # noqa: B036, a failure to report
            self._fail(e)
        finally:
            with self.cond:
                self.alive -= 1
                self.idle.pop(me, None)
                self.cond.notify_all()
                self._kick()
                if self.alive == 0 and self.returned:
                    os.close(self.kick_w)

    def _loop(self, sp: Spool, me: int) -> None:
        done: List[Tuple[_Delivery, BaseException | None,
                         _spool.FinishIn]] = []
        while True:
            with self.cond:
                want = self._may_claim()
                if want:
                    self.started += 1
                    if not self._may_claim():
                        self.cond.notify_all()  # the idle end: max_jobs
            got: List[_spool.Lease] = []
            looked = time.time()
            claimed = time.monotonic()
            if want:
                res, got, err = sp._call(sp._h.finish_claim,
                                         [f for _, _, f in done], 1,
                                         self.lease_ms, self.owner)
            elif done:
                res = sp._call(sp._h.finish, [f for _, _, f in done])
            for (d, exc, f), r in zip(done, res if done else []):
                self._ended(d, exc, f, r)
            done = []
            if want and err:
                with self.cond:
                    self.started -= 1
                raise _os_error(OSError(err, os.strerror(err)),
                                _spool.AT_CALL)
            if not want:
                return
            if not got:
                with self.cond:
                    self.started -= 1
                    self.claimed_at = max(self.claimed_at, looked)
                    seen = self.idle[me] = self.news
                self._kick()
                with self.cond:
                    while self.news == seen and self._may_claim():
                        self.cond.wait()
                    self.idle.pop(me, None)
                continue
            one = self._run(sp, got[0], claimed)
            if one is not None:
                done.append(one)

    def _run(self, sp: Spool, lease: _spool.Lease,
             claimed: float) -> Optional[Tuple[
                 _Delivery, Optional[BaseException], _spool.FinishIn]]:
        job = Job(sp, *lease)
        d = _Delivery(job, self.lease_ms, self.timeout_ms, claimed)
        job._gate = self._finishing
        with self.cond:
            if self.stopping:
                # Claimed as the stop came: given back, no attempt spent.
                job.stopped = "shutdown"
                f: _spool.FinishIn = (job.id, job.token, _spool.RELEASE, 0,
                                      None, -1)
                return (d, None, f)
            self.running[(job.id, job.token)] = d
        self._kick()
        exc: Optional[BaseException] = None
        try:
            self.handler(job)
        except BaseException as e:     # noqa: B036, the handler's to say
            exc = e
        with self.cond:
            # Stopped by the main thread: the main thread's to finish,
            # or nobody's.
            if job.stopped is None:
                d.ending = True
        if job.stopped is not None:
            if job.stopped in ("lost", "cancelled"):
                _log(d, exc, None, None)
            self._gone(d)
            return None
        try:
            f2 = _decide(job, exc)
        except Exception as e:      # noqa: B902, a bad class or delay
            f2 = (job.id, job.token, _spool.RETRY, _class("crashed"),
                  _said(e), -1)
        if f2 is None:
            _log(d, exc, None, None)
            self._gone(d)
            return None
        return (d, exc, f2)

    def _finishing(self, job: Job, on: bool) -> None:
        # The handler finishes its job itself (on), or that failed: under
        # cond, so that the main thread never finishes it beside.
        with self.cond:
            job._finishing = on

    def _gone(self, d: _Delivery) -> None:
        with self.cond:
            self.running.pop((d.job.id, d.job.token), None)
            if not self.running:
                self.last_busy = time.monotonic()
        self._kick()

    def _ended(self, d: _Delivery, exc: Optional[BaseException],
               f: _spool.FinishIn, r: _spool.Result) -> None:
        d.job.finished = r[0] == 0
        _log(d, exc, f, r, exc_info=not isinstance(exc, (Retry, Permanent)))
        self._gone(d)
        if r[0] == -1:
            self._fail(_failed(d.job.id, r))
        elif exc is not None and not isinstance(exc, Exception):
            self._fail(exc)     # SystemExit, say: finished, then raised

    # The main thread.

    def _stop(self) -> None:
        # Under cond.  A second stop ends the grace.
        if self.stopping:
            self.grace_end = time.monotonic()
        else:
            self.stopping = True
            self.grace_end = time.monotonic() + self.grace
        self.cond.notify_all()

    def _wake(self) -> None:
        with self.cond:
            self.news += 1
            self.cond.notify_all()

    def _give_up(self, sp: Spool, d: _Delivery, why: str) -> None:
        """End d without its handler: retried as timeout, or released at
        the end of the grace.  The handler runs on, its job no longer its
        own: Python cannot stop a thread."""
        with self.cond:
            if d.ending or d.job.stopped is not None or d.job._finishing:
                return
            d.job.stopped = why
        if why == "timeout":
            f: _spool.FinishIn = (
                d.job.id, d.job.token, _spool.RETRY, _class("timeout"),
                "timed out after " + _spool.duration(self.timeout_ms), -1)
        else:
            f = (d.job.id, d.job.token, _spool.RELEASE, 0,
                 "stopped after the grace", -1)
        r = sp._call(sp._h.finish, [f])[0]
        _log(d, None, f, r)
        if r[0] == -1:
            self._fail(_failed(d.job.id, r))
        # It stays among the running till its handler returns.

    def _renew(self, sp: Spool, d: _Delivery) -> None:
        job = d.job
        now = time.monotonic()
        d.renew_at = now + max(d.lease / 3, 0.001)
        try:
            r = sp._call(sp._h.renew, job.id, job.token, self.lease_ms)
        except Error as e:
            log.warning("%s: renew: %s", job.id, e)
            if now >= d.expires:
                self._lose(d, "lost", "lease ran out unrenewed")
            else:
                d.renew_at = now + min(_RECHECK, d.lease / 3)
            return
        if r[0] == 0:
            d.expires = now + d.lease
            return
        why = "lost (%s)" % _spool.name("refusal", r[1])
        if _spool.name("refusal", r[1]) == "not leased" and \
                _spool.name("state", r[4]) == "dead":
            try:
                info = sp.show(job.id)
                if info.reason == "cancelled":
                    why = "cancelled" + (" by " + info.by if info.by
                                         else "")
            except Error:
                pass
        self._lose(d, why.split()[0], why)

    def _lose(self, d: _Delivery, why: str, what: str) -> None:
        with self.cond:
            if d.ending or d.job.stopped is not None or d.job._finishing:
                return      # the handler finished it: not lost
            d.job.stopped = why
        log.warning("%s: %s: handler asked to stop, job not finished",
                    d.job.id, what)

    def _timers(self, sp: Spool, news: bool) -> float:
        """Renew, time out and stop what is due; seconds to the next."""
        now = time.monotonic()
        with self.cond:
            ds = [d for d in self.running.values()
                  if not d.ending and d.job.stopped is None and
                  not d.job._finishing]
            stopping, grace_end = self.stopping, self.grace_end
        nxt = float("inf")
        for d in ds:
            if stopping and now >= grace_end:
                self._give_up(sp, d, "shutdown")
                continue
            if now >= d.timeout_at:
                self._give_up(sp, d, "timeout")
                continue
            # A cancel on this host is news: is the file still leased?
            if now >= d.renew_at or (news and
                                     not os.path.exists(d.job.path)):
                self._renew(sp, d)
            nxt = min(nxt, d.renew_at, d.timeout_at)
        if stopping and ds:
            nxt = min(nxt, grace_end)
        return max(0.0, nxt - now)

    def _until_due(self, sp: Spool, fd: Optional[int]) -> float:
        # Seconds until an idle thread's claim may find work.
        with self.cond:
            if not self.idle or self.stopping:
                return float("inf")
            claimed_at = self.claimed_at
        return sp._until_due(fd, claimed_at)

    def _idle_done(self) -> float:
        # Under cond: seconds until idle_exit ends the worker (0: now).
        if self.idle_exit is None or self.running or sum(
                g == self.news for g in self.idle.values()) < self.alive:
            return float("inf")
        return max(0.0, self.last_busy + self.idle_exit - time.monotonic())

    def run(self) -> int:
        fd: Optional[int] = None
        sigs: Optional[_Signals] = None
        try:
            fd = _watch(self.path)
            sigs = _Signals(self)
            with Spool(self.path) as sp:
                for i in range(self.concurrency):
                    t = threading.Thread(target=self._thread, args=(i,),
                                         daemon=True,
                                         name="spool-work-%d" % i)
                    with self.cond:
                        self.alive += 1
                    try:
                        t.start()
                    except BaseException:
                        with self.cond:
                            self.alive -= 1
                        raise
                try:
                    self._main(sp, fd, sigs.rfd)
                except BaseException as e:  # noqa: B036, reported below
                    self._abandon(sp, e)
        finally:
            if sigs is not None:
                sigs.restore()
            if fd is not None:
                os.close(fd)
            # A thread still in a stopped handler kicks a closed pipe when
            # it ends (_kick ignores it); the last to end closes kick_w.
            os.close(self.kick_r)
            with self.cond:
                self.returned = True
                if self.alive == 0:
                    os.close(self.kick_w)
        if self.error is not None:
            raise self.error
        return self.started

    def _abandon(self, sp: Spool, e: BaseException) -> None:
        """The main thread failed: no renewal or timeout can come.  Stop
        at once, and give back what runs, as the end of the grace does."""
        with self.cond:
            if self.error is None:
                self.error = e
            self.stopping = True
            self.grace_end = time.monotonic()
            self.cond.notify_all()
            ds = list(self.running.values())
        for d in ds:
            try:
                self._give_up(sp, d, "shutdown")
            except Exception:   # noqa: B902, the first error is raised
                pass

    def _main(self, sp: Spool, fd: Optional[int],
              sig: Optional[int]) -> None:
        p = select.poll()
        for f in (fd, sig, self.kick_r):
            if f is not None:
                p.register(f, select.POLLIN)
        news = False
        while True:
            # Without inotify, each running job's file is looked for every
            # second, as news: a cancel is seen within it.
            pause = self._timers(sp, news or fd is None)
            due = self._until_due(sp, fd)
            due_at = time.monotonic() + due
            with self.cond:
                # Done when every thread has ended; or, stopping, when
                # those left run on in handlers whose jobs are no longer
                # theirs.
                if self.alive == 0 or self.stopping and self.alive <= sum(
                        d.job.stopped is not None
                        for d in self.running.values()):
                    return
                idle = self._idle_done()
                if idle == 0:
                    self._stop()
                    continue
            pause = min(pause, due, idle)
            if fd is None and self.running:
                pause = min(pause, _RECHECK)
            ms = None if pause == float("inf") else \
                max(1, min(2 ** 31 - 1, int(pause * 1000) + 1))
            ready = p.poll(ms)
            news = False
            for rfd, _ in ready:
                got = _drain(rfd)
                news = news or rfd == fd
                if rfd == sig:
                    _Signals.stop(self, got)
            if news or time.monotonic() >= due_at:
                self._wake()


class _Signals:
    """SIGTERM and SIGINT stop the worker, a second ends the grace; from
    the main thread only, as Python allows.  The main thread learns of
    them from the bytes of the wakeup fd, not from a Python handler:
    CPython runs that late when another thread took the signal."""

    def __init__(self, w: _Worker) -> None:
        self.rfd: Optional[int] = None
        self.old: Dict[int, Any] = {}
        self.old_fd = -1
        if threading.current_thread() is not threading.main_thread():
            return
        r, wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.rfd, self.wfd = r, wfd
        self.old_fd = signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
        for s in (signal.SIGTERM, signal.SIGINT):
            self.old[s] = signal.signal(s, lambda signum, frame: None)

    @staticmethod
    def stop(w: _Worker, got: bytes) -> None:
        for b in got:
            if b in (signal.SIGTERM, signal.SIGINT):
                with w.cond:
                    w._stop()

    def restore(self) -> None:
        """The handlers as they were; a signal that came too late for the
        worker goes to them."""
        if self.rfd is None:
            return
        late = [b for b in _drain(self.rfd)
                if b in (signal.SIGTERM, signal.SIGINT)]
        for s, h in self.old.items():
            # None: set from C, not Python; the default is the nearest.
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        signal.set_wakeup_fd(self.old_fd)
        os.close(self.rfd)
        os.close(self.wfd)
        self.rfd = None
        for b in sorted(set(late)):
            signal.raise_signal(b)


def work(path: "str | os.PathLike[str]", handler: Callable[[Job], Any], *,
         concurrency: int = 1, lease: Duration,
         owner: Optional[str] = None, timeout: Optional[Duration] = None,
         grace: Duration = 30, max_jobs: Optional[int] = None,
         once: bool = False, idle_exit: Optional[Duration] = None) -> int:
    """Run handler(job) for each job of the spool at path, as spool-run(1)
    runs a command, and return how many jobs it claimed.

    The handler's end says the outcome: a return is ok, unless it finished
    the job itself (its log line then says outcome=- state=-); Retry and
    Permanent choose; any other exception is a retry of class crashed.  Up to concurrency handlers run at once, each
    in a thread with a Spool of its own.  Each finish and the next claim
    share one wait.  The main thread renews each lease about every third
    of it, and watches the spool as spool-run does.

    Python cannot stop a thread.  So when a job is cancelled, its lease
    lost, its timeout passed or the grace ended, job.cancelled turns true
    and job.stopped says which, as spool-run's stopped= does.  The job is
    then not the handler's to finish: the worker retries it as timeout,
    releases it at the end of the grace, or leaves it to whoever holds it.
    A handler that runs long should look at job.cancelled and return.

    SIGTERM and SIGINT, when work runs in the main thread, stop it: nothing
    new is claimed and running handlers get grace seconds.  A second
    signal ends the grace.  In another thread it takes no signal, and
    only max_jobs, once or idle_exit end it.  timeout None is the spool's timeout, 0 none.
    once runs one job if one is due.  idle_exit returns once no handler
    has run for that long.  Each delivery logs one line on the "spool"
    logger, spool-run's with exception=TYPE for exit=.  A system error
    stops the worker as a signal does, then raises TemporaryError."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) \
            or not 1 <= concurrency <= _spool.BATCH_MAX:
        raise InvalidArgument("concurrency: bad number %r (1 to %d)"
                              % (concurrency, _spool.BATCH_MAX))
    if max_jobs is not None and (isinstance(max_jobs, bool) or
                                 not isinstance(max_jobs, int) or
                                 max_jobs < 1):
        raise InvalidArgument("max_jobs: bad number %r (1 or more)"
                              % (max_jobs,))
    lease_ms = _ms("lease", lease, 0)
    grace_s = _ms("grace", grace, 0, zero_ok=True) / 1000
    idle_s = None if idle_exit is None else \
        _ms("idle_exit", idle_exit, 0, zero_ok=True) / 1000
    _word("owner", "owner", owner)
    path = os.fspath(path)
    with Spool(path) as sp:
        config_timeout = sp._call(sp._h.settings)[1]
    timeout_ms = config_timeout if timeout is None else \
        _ms("timeout", timeout, 0, zero_ok=True)
    if once:
        max_jobs, idle_s = 1, 0.0
    return _Worker(path, handler, concurrency, lease_ms, owner, timeout_ms,
                   grace_s, max_jobs, idle_s).run()
