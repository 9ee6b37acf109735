"""What a spool must hold after a power cut (spool-layout.md, "Power
cuts"): the scenarios, their setup, and the checks of a state, shared by
the explorer (tests/powercut/explore, states built on a model) and
tests/powercut/realfs (states a real kernel left on a loop-mounted image).
"""

import collections
import os
import re
import shutil
import subprocess
import sys


HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(TOP, 'tests', 'bin')   # the test build: its hooks
AUDIT_LINES = os.path.join(HERE, 'audit-lines')
PROG = os.path.basename(sys.argv[0])

T0 = 1796026336000          # setup's clock
T1 = T0 + 25000             # the traced command's clock: leases still held
# The next claims: the command's leases live; the setup's (1 m) expired
# and a renewed one (2 m) live; every lease expired.
LATER = (10000, 60000, 3600000)

# Payloads: the explorer's own copy of what each job holds.  Sizes cross
# sector boundaries so that torn writes happen.
PAYLOADS = {
    'j1': bytes((i * 7 + 3) % 251 for i in range(1300)),
    'j2': b'second job\n',
    'j3': bytes((i * 13 + 1) % 253 for i in range(700)),
    'w': b'',
}

# A scenario: setup (bash, untraced, clock T0), the traced command (argv,
# {tok:ID} is the token of ID's lease before it), its clock, its stdin.
# $P_ID is the path of ID's payload.
ENQ = 'spool-enqueue --id {0} "$P_{0}" >/dev/null\n'
SC = collections.OrderedDict()


def scenario(name, setup, argv, now=T1, stdin=None, batch=False, mids=(),
             env=None, unsynced=(), same_boot=False):
    """mids: the crash points (tests/README.md, "Crash points") after
    each transition but the last of a command that makes several; env:
    more variables for the traced command; unsynced: names (top first)
    that the setup made and did not make durable, as another process
    that has not reached its sync yet leaves them; same_boot: the
    unsynced writes are lost with the host up, so that what runs after
    the cut has the command's boot ID (Oracle)."""
    SC[name] = dict(setup=setup, argv=argv, now=now, stdin=stdin,
                    batch=batch, mids=mids, env=env or {},
                    unsynced=unsynced, same_boot=same_boot)


def bucket_of(ms):
    """The path of the bucket of new/ that a job eligible at ms goes to."""
    slot = ms >> 4
    return ['new/%08x' % (slot >> 24),
            'new/%08x/%03x' % (slot >> 24, (slot >> 12) & 0xfff),
            'new/%08x/%03x/%03x' % (slot >> 24, (slot >> 12) & 0xfff,
                                    slot & 0xfff)]


# Setup that fills the audit log past a sector, so that its appends may tear.
WARM = ''.join(ENQ.format('w%d' % i).replace('"$P_w%d"' % i, '/dev/null')
               for i in range(6))
CLAIM1 = 'spool-claim --lease 1m >/dev/null\n'
scenario('enqueue-first', '', ['spool-enqueue', '--id', 'j1', '$P_j1'])
scenario('enqueue', WARM, ['spool-enqueue', '--id', 'j1', '$P_j1'])
# A bucket path another producer has just made, and not yet made
# durable: the enqueue that moves a job into it must (spool-layout.md,
# "Buckets").
JOIN = bucket_of(T1)
scenario('enqueue-join', 'mkdir -p "$SPOOL_DIR/%s"\n' % JOIN[-1],
         ['spool-enqueue', '--id', 'j1', '$P_j1'], unsynced=JOIN)
scenario('enqueue-cycle', ENQ.format('j1') + CLAIM1 +
         'spool-finish j1 "$(tok j1)" ok >/dev/null\n',
         ['spool-enqueue', '--id', 'j1', '$P_j1'])
scenario('claim', WARM + 'SPOOL_TEST_NOW=$((T0 - 1000)) ' + ENQ.format('j1'),
         ['spool-claim'])
scenario('reclaim', ENQ.format('j1') +
         'spool-claim --lease 1s >/dev/null\n', ['spool-claim'])
# Writes lost with the host up (a failed writeback, a file server): the
# boot ID stays, and the next claim trusts the counter's last token
# (spool-layout.md, "Tokens").  The setup took a token, so the command
# reserves no block: its one wait syncs last.  The next claim has other
# jobs to take, each of which would get the command's token again if
# last went back: the warm-up jobs, and j2 once the setup's lease of a
# minute ends; in the reclaim, j2, due 5 s after the command.
scenario('claim-sameboot', WARM + 'SPOOL_TEST_NOW=$((T0 - 2000)) ' +
         ENQ.format('j2') + 'SPOOL_TEST_NOW=$((T0 - 1000)) ' +
         ENQ.format('j1') + CLAIM1, ['spool-claim'], same_boot=True)
scenario('reclaim-sameboot', ENQ.format('j1') +
         ENQ.format('j2').replace('--id', '--delay 30s --id') +
         'spool-claim --lease 1s >/dev/null\n', ['spool-claim'],
         same_boot=True)
scenario('finish-ok', ENQ.format('j1') + CLAIM1,
         ['spool-finish', 'j1', '{tok:j1}', 'ok'])
scenario('finish-fail', ENQ.format('j1') + CLAIM1,
         ['spool-finish', 'j1', '{tok:j1}', 'permanent'])
scenario('finish-retry', ENQ.format('j1') + CLAIM1,
         ['spool-finish', '--delay', '1s', 'j1', '{tok:j1}', 'retry'])
# A full disk: the first mkdir (a bucket a day away) or rename fails with
# ENOSPC, and the command draws on the reserve and tries again
# (spool-layout.md, "The reserve").
FULL = dict(LD_PRELOAD=os.path.join(TOP, 'tests', 'shim', 'faultshim.so'),
            SHIM_NTH='1', SHIM_ERRNO='ENOSPC')
scenario('retry-full', ENQ.format('j1') + CLAIM1,
         ['spool-finish', '--delay', '1d', 'j1', '{tok:j1}', 'retry'],
         env=dict(FULL, SHIM_FAMILY='mkdir'))
scenario('claim-full', ENQ.format('j1'), ['spool-claim'],
         env=dict(FULL, SHIM_FAMILY='rename'))
# A key under a limit of 1 (spool-layout.md, "Slots"): the claim takes
# j1 and its slot, and passes over j2; the finish gives the slot back.
KEYED = 'echo limit.k=1 >>"$SPOOL_DIR/config"\n' + \
    ENQ.format('j1').replace('--id', '--key k --id') + \
    ENQ.format('j2').replace('--id', '--key k --delay 1ms --id')
scenario('claim-keyed', KEYED, ['spool-claim', '-n', '2'])
scenario('finish-keyed', KEYED + CLAIM1,
         ['spool-finish', 'j1', '{tok:j1}', 'ok'])
scenario('renew', ENQ.format('j1') + CLAIM1,
         ['spool-renew', '--lease', '2m', 'j1', '{tok:j1}'])
DEAD = ENQ.format('j1') + CLAIM1 + \
    'spool-finish j1 "$(tok j1)" permanent >/dev/null\n'
OP = ['--by', 'ops', '--note', 'T-1']
scenario('redrive', DEAD, ['spool-redrive'] + OP + ['j1'])
scenario('drop', DEAD, ['spool-drop'] + OP + ['j1'])
scenario('cancel', ENQ.format('j1'), ['spool-cancel'] + OP + ['j1'])
scenario('cancel-leased', ENQ.format('j1') + CLAIM1,
         ['spool-cancel'] + OP + ['j1'])
scenario('purge', ENQ.format('j1') + CLAIM1 +
         'spool-finish j1 "$(tok j1)" ok >/dev/null\n',
         ['spool-purge', 'done', 'j1'])
# The first write of this host: its log, and audit/'s entry for it, are new.
scenario('purge-newhost', 'export SPOOL_HOST=g\n' + ENQ.format('j1') + CLAIM1 +
         'spool-finish j1 "$(tok j1)" ok >/dev/null\n',
         ['spool-purge', 'done', 'j1'])
scenario('pause', '', ['spool-pause'] + OP)
scenario('resume', 'spool-pause --by ops --note T-1\n', ['spool-resume'] + OP)
scenario('fsck-repair', ENQ.format('j1') + ENQ.format('j2') +
         'SPOOL_TEST_CRASH=enqueue-published ' + ENQ.format('j3').strip() +
         ' || true\nSPOOL_TEST_CRASH=claim-moved spool-claim || true\n',
         ['spool-fsck', '--repair'])
# A repair of each kind a power cut or a kill may call for at once: a purge
# cut short after its unlink, a drop whose move a cut undid, a pause
# without its line.
scenario('fsck-repair-more', ENQ.format('j1') + CLAIM1 +
         'spool-finish j1 "$(tok j1)" ok >/dev/null\n'
         'SPOOL_TEST_CRASH=purge-synced spool-purge done j1 || true\n' +
         ENQ.format('j2') + 'spool-claim --lease 1m >/dev/null\n'
         'spool-finish j2 "$(tok j2)" permanent >/dev/null\n'
         'spool-drop --by ops --note T-1 j2 >/dev/null\n'
         'mv "$SPOOL_DIR/done/j2" "$SPOOL_DIR/dead/j2"\n'
         'printf "ops T-2\\n" >"$SPOOL_DIR/paused"\n',
         ['spool-fsck', '--repair'])
scenario('fsck-restored', ENQ.format('j1') + CLAIM1 + ENQ.format('j2'),
         ['spool-fsck', '--restored'])
# spool-init --upgrade of a format 1 spool (tests/fixtures/README.md).
scenario('upgrade', 'rm -rf "$SPOOL_DIR"\n'
         'tar -C "${SPOOL_DIR%/*}" -xzf "$FIXTURES/format1-spool.tar.gz"\n',
         ['spool-init', '--upgrade'])
# A group spool: buckets and files made with the group's modes.
scenario('group-enqueue', 'rm -rf "$SPOOL_DIR"\n'
         'spool-init --group "$(id -gn)"\n' + ENQ.format('j2'),
         ['spool-enqueue', '--id', 'j1', '$P_j1'])
# The first write of a new host in multi-host mode: hosts/h, audit/h.log.
scenario('enqueue-newhost', 'export SPOOL_HOST=g\n'
         'printf "multi-host=yes\\nskew=1s\\n" >>"$SPOOL_DIR/config"\n' +
         ENQ.format('j2'), ['spool-enqueue', '--id', 'j1', '$P_j1'])
# A worker's reclaim of an expired lease (spool-run, one job).
scenario('run-reclaim', ENQ.format('j1') +
         'spool-claim --lease 1s >/dev/null\n',
         ['spool-run', '--once', '--owner', 'w', '--', 'true'],
         mids=('claim-logged',))
# A worker's finish and its next claim in one wait (spool_finish_claim):
# it claims one job, and when its handler ends, ends that delivery and
# claims the other in the finish's wait; then ends the second alone.  j2
# is due later, so that every run claims j1 first, whatever the order of
# a directory's names.
scenario('run-finish-claim', ENQ.format('j1') +
         ENQ.format('j2').replace('--id', '--delay 100ms --id'),
         ['spool-run', '-j', '1', '--max-jobs', '2', '--owner', 'w', '--',
          'true'], mids=('claim-logged', 'finish-logged'))
B3 = ENQ.format('j1') + ENQ.format('j2') + ENQ.format('j3')
scenario('enqueue-batch', WARM, ['spool-enqueue', '$P_j1', '$P_j2', '$P_j3'],
         batch=True)
scenario('claim-batch', B3, ['spool-claim', '-n', '3'], batch=True)
scenario('finish-batch', B3 + 'spool-claim --lease 1m -n 3 >/dev/null\n',
         ['spool-finish', '-'], batch=True,
         stdin='j1 {tok:j1} ok\nj2 {tok:j2} permanent\nj3 {tok:j3} retry\n')
# The same batches with config syncfs=yes (spool-layout.md, "One syncfs
# for a large wait"), a wait of 3 syncs or more made one syncfs: an
# enqueue's first wait, a claim's and a finish's one wait.
SYNCFS = 'echo syncfs=yes >>"$SPOOL_DIR/config"\n'
SYNCFS_ENV = {'SPOOL_TEST_SYNCFS_MIN': '3'}
scenario('enqueue-syncfs', WARM + SYNCFS,
         ['spool-enqueue', '$P_j1', '$P_j2', '$P_j3'], batch=True,
         env=SYNCFS_ENV)
scenario('claim-syncfs', B3 + SYNCFS, ['spool-claim', '-n', '3'],
         batch=True, env=SYNCFS_ENV)
scenario('finish-syncfs', B3 + SYNCFS +
         'spool-claim --lease 1m -n 3 >/dev/null\n', ['spool-finish', '-'],
         batch=True, env=SYNCFS_ENV,
         stdin='j1 {tok:j1} ok\nj2 {tok:j2} permanent\nj3 {tok:j3} retry\n')

def env_for(spool, now, boot, extra=None):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith('SPOOL_TEST_'):
            del e[k]
    e.update(PATH=BIN + ':' + e['PATH'], SPOOL_DIR=spool, SPOOL_HOST='h',
             SPOOL_TEST_NOW=str(now), SPOOL_TEST_BOOT_ID=boot,
             ASAN_OPTIONS='detect_leaks=0', LC_ALL='C')
    if extra:
        e.update(extra)
    return e


# ---- the checks ----------------------------------------------------------

def jobs_of(spool):
    """ID -> list of (state, name) of its job files; quarantined names."""
    out = collections.defaultdict(list)
    for st in ('new', 'leased', 'done', 'dead'):
        for r, _, fs in os.walk(os.path.join(spool, st)):
            for f in fs:
                out[f.split(',')[0]].append((st, f, os.path.join(r, f)))
    p = os.path.join(spool, 'paused')
    if os.path.exists(p):
        out['-'].append(('paused', open(p, 'rb').read().decode(), p))
    q = os.path.join(spool, 'quarantine')
    quar = sorted(os.listdir(q)) if os.path.isdir(q) else []
    return out, quar


def audit_of(spool):
    r = subprocess.run([AUDIT_LINES, spool], capture_output=True)
    if r.returncode != 0:
        return None, ['audit-lines: exit %d %s' % (r.returncode, r.stderr)]
    lines = r.stdout.decode().splitlines()
    bad = [l for l in lines if l.startswith('unparsed ')]
    per = collections.defaultdict(collections.Counter)
    for l in lines:
        if not l.startswith('unparsed '):
            per[l.split()[1]][l] += 1
    return per, bad


def unvoided(lines):
    """The lines less each one a void line says did not happen, and that
    void line (spool-layout.md, "The audit log"): a void line repeats its
    line's ID, token, attempt, cycle and actor, with its event as the note."""
    c = collections.Counter(lines)
    for v in list(c.elements()):
        f = v.split()
        if f[0] != 'void' or c[v] == 0:
            continue
        for x in list(c):
            g = x.split()
            if c[x] > 0 and g[0] == f[8] and g[1:6] == f[1:6]:
                c[x] -= 1
                c[v] -= 1
                break
    return +c


def tokens_next(spool):
    try:
        t = open(os.path.join(spool, 'tokens'), 'rb').read().decode()
        return int(re.match(r'next=(\d+) ', t).group(1))
    except (OSError, AttributeError, ValueError, UnicodeError):
        return None


def slot_violations(spool):
    """No key has more leases than its limit, and each lease of a limited
    key has its slot (spool-layout.md, "Slots")."""
    limits, held, v = {}, collections.Counter(), []
    try:
        with open(os.path.join(spool, 'config')) as f:
            for line in f:
                m = re.match(r'limit\.([A-Za-z0-9._-]+)=(\d+)$', line.strip())
                if m:
                    limits[m.group(1)] = int(m.group(2))
    except OSError:
        return v
    for name in os.listdir(os.path.join(spool, 'leased')):
        jid = name.split(',')[0]
        try:
            with open(os.path.join(spool, 'meta', jid), 'rb') as f:
                m = re.search(rb' key=(\S+)', f.read())
        except OSError:
            continue
        if m is None or m.group(1).decode() not in limits:
            continue
        key = m.group(1).decode()
        held[key] += 1
        if not os.path.exists(os.path.join(spool, 'slots', key, jid)):
            v.append('leased %s of key %s has no slot' % (jid, key))
    for key, n in sorted(held.items()):
        if n > limits[key]:
            v.append('key %s: %d leases, limit %d' % (key, n, limits[key]))
    return v


def run_fsck(spool, now, repair, boot='boot-b'):
    argv = [os.path.join(BIN, 'spool-fsck')] + (['--repair'] if repair else [])
    r = subprocess.run(argv, capture_output=True,
                       env=env_for(spool, now, boot))
    return r.returncode, (r.stdout + r.stderr).decode('utf-8', 'replace')


def listed(spool, now, boot='boot-b'):
    """Where commands see each job: spool-ls of each state."""
    out = {}
    for st in ('new', 'leased', 'done', 'dead'):
        r = subprocess.run([os.path.join(BIN, 'spool-ls'), st],
                           capture_output=True,
                           env=env_for(spool, now, boot))
        out[st] = sorted(r.stdout.decode().split())
        if r.returncode != 0:
            out[st].append('exit %d' % r.returncode)
    return out


def spool_format(spool):
    try:
        with open(os.path.join(spool, 'format'), 'rb') as f:
            return f.read()
    except OSError:
        return None


def milestones(name, pre, work, argv, stdin, extra=None):
    """The states after each transition but the last of scenario name's
    command (its mids), each made by a run killed there, from pre."""
    out = []
    for i, point in enumerate(SC[name]['mids']):
        d = os.path.join(work, 'mid%d' % i)
        shutil.copytree(pre, d, symlinks=True)
        r = subprocess.run(argv, input=stdin, capture_output=True,
                           env=env_for(d, SC[name]['now'], 'boot-a', dict(
                               extra or {}, SPOOL_TEST_CRASH=point)))
        if r.returncode != -9:
            raise SystemExit(PROG + ': %s: not killed at %s: exit %d'
                             % (name, point, r.returncode))
        out.append(d)
    return out


def loc(entries):
    return tuple(sorted((s, n) for s, n, _ in entries))


class Oracle:
    """What the states before and after the command are, once repaired.
    What runs after the cut runs in a new boot; with same_boot, in the
    command's (boot-a): then the next claim trusts the counter's last."""

    def __init__(self, pre, post, work, now, mids=(), same_boot=False):
        self.now = now
        self.same_boot = same_boot
        self.boot = 'boot-a' if same_boot else 'boot-b'
        self.issued0 = issued_in(pre)
        self.r0 = self._repaired(pre, os.path.join(work, 'r0'))
        self.r1 = self._repaired(post, os.path.join(work, 'r1'))
        # the states between the transitions of a command that makes several
        self.rm = [self._repaired(m, os.path.join(work, 'rm%d' % i))
                   for i, m in enumerate(mids)]
        self.shown = listed(os.path.join(work, 'r1'), now, self.boot)
        self.next1 = tokens_next(post)
        # what the next claim leases after the command, where not paused
        self.due = None
        if not self.r1['jobs'].get('-'):
            self.due = {}
            for later in LATER:
                r, got = self.claim(os.path.join(work, 'r1'), later)
                self.due[later] = sorted(g[0] for g in got)
        self.raw = []
        for d in (pre, post):
            for x in os.listdir(os.path.join(d, 'audit')):
                with open(os.path.join(d, 'audit', x), 'rb') as f:
                    self.raw += f.read().decode('utf-8', 'replace').split('\n')
        # Each job's payload: the explorer's copy (generated IDs: whichever
        # of its payloads the command was given; the warm-up jobs: empty).
        self.payload = {}
        for src in (pre, post):
            jobs, _ = jobs_of(src)
            for jid, have in jobs.items():
                for st, n, p in have:
                    if st == 'paused':
                        continue
                    with open(p, 'rb') as f:
                        d = f.read()
                    want = PAYLOADS.get(jid)
                    if want is None and (d in PAYLOADS.values() or
                                         src == pre):
                        # a made-up ID, or a fixture's job: as it was
                        want = d
                    elif want is None:
                        want = self.payload.get(jid)
                    if d != want:
                        raise SystemExit(PROG + ': %s holds what no one '
                                         'enqueued' % jid)
                    self.payload[jid] = want

    def _repaired(self, src, dst):
        shutil.copytree(src, dst, symlinks=True)
        run_fsck(dst, self.now, True, self.boot)
        jobs, _ = jobs_of(dst)
        audit, bad = audit_of(dst)
        if bad:
            raise SystemExit(PROG + ': before or after: %s' % bad)
        return dict(jobs={k: loc(v) for k, v in jobs.items()}, audit=audit,
                    tokens=tokens_next(dst))

    def claim(self, spool, later):
        """spool-claim -n 100, later ms on, on a copy of spool."""
        work = spool + '.next'
        if os.path.exists(work):
            shutil.rmtree(work)
        shutil.copytree(spool, work, symlinks=True)
        r = subprocess.run([os.path.join(BIN, 'spool-claim'), '-n', '100'],
                           capture_output=True, env=env_for(
                               work, self.now + later, self.boot))
        shutil.rmtree(work)
        return r, [l.split('\t') for l in r.stdout.decode().splitlines()]

    def next_claim(self, spool, issued):
        """After an acknowledged command, the next claim, with no repair
        first, leases just the jobs due then, with tokens never issued."""
        v = []
        for later, due in (self.due or {}).items():
            r, got = self.claim(spool, later)
            ids = sorted(g[0] for g in got)
            if r.returncode not in (0, 1) or ids != due:
                v.append('the next claim, %d ms on: exit %d, leased %s, not '
                         '%s' % (later, r.returncode, ids, due))
            for g in got:
                if int(g[1]) <= issued:
                    v.append('the next claim, %d ms on: token %s again'
                             % (later, g[1]))
        return v

    def tokens_again(self, spool, issued, what):
        """The next claim, an hour on (every lease expired), hands out
        tokens above issued only."""
        _, got = self.claim(spool, LATER[-1])
        return ['%s, the next claim, %d ms on: token %s again'
                % (what, LATER[-1], g[1]) for g in got if int(g[1]) <= issued]

    def check(self, spool, acked, issued):
        v = []
        if acked:
            # Exit 0 promised the new state: commands see it with no repair.
            shown = listed(spool, self.now, self.boot)
            if shown != self.shown:
                v.append('with no repair, spool-ls shows %s, not %s'
                         % (shown, self.shown))
            v += self.next_claim(spool, issued)
        elif self.same_boot:
            # Not answered: its own token may come again (spool-layout.md,
            # "Tokens"), none acknowledged before it.
            v += self.tokens_again(spool, self.issued0, 'with no repair')
        nxt = tokens_next(spool)
        if acked and self.next1 is not None and (nxt or 0) < self.next1:
            # a raise of next the command reported (spool-fsck --restored)
            v.append('tokens: next=%s, below %d, what the command left'
                     % (nxt, self.next1))
        if nxt is not None and nxt <= issued:
            v.append('tokens: next=%d, not above %d, a token handed out'
                     % (nxt, issued))
        rc, out = run_fsck(spool, self.now, True, self.boot)
        if rc not in (0, 1):
            v.append('spool-fsck --repair: exit %d: %s' % (rc, out.strip()))
        rc, out = run_fsck(spool, self.now, False, self.boot)
        if rc != 0 or out:
            v.append('spool-fsck after repair: exit %d: %s'
                     % (rc, out.strip().replace('\n', '; ')))
        nxt2 = tokens_next(spool)
        if nxt2 is None and spool_format(spool) == b'1\n':
            pass        # format 1 keeps no counter (see Tokens)
        elif nxt2 is None or nxt2 <= issued or (nxt is not None and
                                                nxt2 < nxt):
            v.append('tokens after repair: next=%s, before %s, issued %d'
                     % (nxt2, nxt, issued))
        if self.same_boot:
            v += self.tokens_again(spool, issued if acked else self.issued0,
                                   'after repair')
        v += slot_violations(spool)
        jobs, quar = jobs_of(spool)
        if quar:
            v.append('quarantined: %s' % ' '.join(quar))
        audit, bad = audit_of(spool)
        # A torn line, ended by the next append's space and newline, is
        # skipped by readers; a line glued to one is not a line of the log.
        bad = [b for b in bad if not (b.endswith(' ') and any(
            l.startswith(b[len('unparsed '):-1]) for l in self.raw))]
        if audit is None or bad:
            v.append('audit: %s' % '; '.join(bad))
            audit = audit or {}
        r0, r1 = self.r0, self.r1
        for jid in sorted(set(jobs) | set(r0['jobs']) | set(r1['jobs'])):
            have = jobs.get(jid, [])
            l, l0, l1 = loc(have), r0['jobs'].get(jid, ()), r1['jobs'].get(jid, ())
            if len(have) > 1:
                v.append('%s: in %d places: %s' % (jid, len(have), l))
            for st, n, p in have:
                if st != 'paused':
                    with open(p, 'rb') as f:
                        if f.read() != self.payload.get(jid):
                            v.append('%s: payload differs in %s/%s'
                                     % (jid, st, n))
                if st == 'paused' and (jid, l) not in ((jid, l0), (jid, l1)):
                    v.append('paused holds %r' % n)
            a = audit.get(jid, collections.Counter())
            a0, a1 = r0['audit'].get(jid, collections.Counter()), \
                r1['audit'].get(jid, collections.Counter())
            if a0 - a:
                v.append('%s: audit lines lost: %s' % (jid, list(a0 - a)))
            new, want = unvoided(a - a0), a1 - a0
            mids = [(rm['jobs'].get(jid, ()), rm['audit'].get(
                jid, collections.Counter()) - a0) for rm in self.rm]
            if jid == '-':
                # A line repair appends names no operator for a resume.
                new, want = [collections.Counter(x.split()[0] for x in
                             c.elements()) for c in (new, want)]
            if acked:
                ok = l == l1 and new == want
            else:
                ok = (l == l0 and not new) or (l == l1 and new == want) or \
                    (l, new) in mids
            if not ok:
                v.append('%s: at %s (before %s, after %s), new audit lines %s'
                         % (jid, list(l) or 'nowhere', list(l0) or 'nowhere',
                            list(l1) or 'nowhere', sorted(new.elements())))
        return v


# ---- one scenario --------------------------------------------------------

def sh_preamble(work):
    """What a scenario's shell script may use: tok ID (the token of ID's
    lease) and $P_ID (the path of ID's payload)."""
    pre = ['set -e', 'T0=%d' % T0,
           'FIXTURES=%s' % os.path.join(TOP, 'tests', 'fixtures'),
           'tok() { find "$SPOOL_DIR/leased" -name "$1,*" -printf "%f\\n" '
           '| sed "s/.*,//"; }']
    for k in PAYLOADS:
        pre.append('P_%s=%s/payload.%s' % (k, work, k))
    return '\n'.join(pre) + '\n'


def sh(script, spool, now, work):
    r = subprocess.run(['bash', '-c', sh_preamble(work) + script],
                       env=env_for(spool, now, 'boot-a'), capture_output=True)
    if r.returncode != 0:
        raise SystemExit(PROG + ': setup failed: %s' % r.stderr.decode())


def subst(s, spool, work):
    def tok(m):
        for f in os.listdir(os.path.join(spool, 'leased')):
            if f.split(',')[0] == m.group(1):
                return f.split(',')[1]
        raise SystemExit(PROG + ': no lease of %s' % m.group(1))
    s = re.sub(r'\{tok:([^}]+)\}', tok, s)
    return re.sub(r'\$P_(\w+)', lambda m: '%s/payload.%s' % (work, m.group(1)), s)


def prepare(name, work):
    """Scenario name's spool in work, as its setup leaves it, with the
    payloads beside it: (spool, argv, stdin)."""
    sc = SC[name]
    spool = set_up(work, sc['setup'])
    argv = [subst(a, spool, work) for a in sc['argv']]
    stdin = subst(sc['stdin'], spool, work).encode() if sc['stdin'] else None
    return spool, argv, stdin


def set_up(work, setup):
    """A spool in work, and the payloads beside it; then the script setup
    (bash, at T0) run on it."""
    for k, v in PAYLOADS.items():
        with open(os.path.join(work, 'payload.' + k), 'wb') as f:
            f.write(v)
    spool = os.path.join(work, 'spool')
    subprocess.run([os.path.join(BIN, 'spool-init')], check=True,
                   env=env_for(spool, T0, 'boot-a'))
    sh(setup, spool, T0, work)
    return spool


def issued_in(spool):
    """The highest token a record of spool names (0: none)."""
    top = 0
    for r, _, fs in os.walk(os.path.join(spool, 'meta')):
        for x in fs:
            with open(os.path.join(r, x), 'rb') as f:
                top = max([top] + [int(t) for t in
                           re.findall(rb'\btok=(\d+)', f.read())])
    return top
