#!/usr/bin/env bats
# spool-ls and spool-show: what an operator reads before deciding.  Listings
# each job once (in directory order; -l sorted by ID in byte order), the
# long and JSON forms whole, NUL-separated names, and one job's record,
# delivery history and audit lines, rotated logs included.  The clock is
# pinned, so ages are exact.

load helpers

T=1796000000000

# park ID CLASS [ENQUEUE OPTIONS...]: enqueue ID at T, claim it at T + 1s,
# finish it permanent with CLASS at T + 2s.
park() {
	local id=$1 class=$2 tok
	shift 2
	at_ms $T spool-enqueue --id "$id" "$@" <<<"payload of $id" >/dev/null
	tok=$(at_ms $((T + 1000)) spool-claim --owner w1 | cut -f2)
	at_ms $((T + 2000)) spool-finish --class "$class" "$id" "$tok" \
	    permanent >/dev/null
	equals "$(state_of "$id")" dead
}

# park_all CLASS ID...: park every ID at once, permanent with CLASS.
park_all() {
	local class=$1 id
	shift
	for id; do
		at_ms $T spool-enqueue --id "$id" <<<"payload of $id" >/dev/null
	done
	at_ms $((T + 1000)) spool-claim --owner w1 -n $# |
	    awk '{ print $1, $2, "permanent" }' >"$BATS_TEST_TMPDIR/fin"
	at_ms $((T + 2000)) spool-finish --class "$class" - \
	    <"$BATS_TEST_TMPDIR/fin" >/dev/null
	[ "$(ids_in dead | wc -l)" -eq $# ]
}

# The SYNOPSIS of a man page as one line, as usage prints it.
synopsis() {
	mandoc -Tascii "$BATS_TEST_DIRNAME/../man/$1.1" | col -b |
	    awk '/^SYNOPSIS/ { on = 1; next } /^[A-Z]/ { on = 0 } on' |
	    tr -s ' \n\t' '   ' | sed 's/^ //; s/ $//'
}

# The story of order-1842: a retry with a detail, a lease that ran out and
# was taken over, a permanent failure, a redrive, and a delivery under way.
story() {
	at_ms $T spool-enqueue --id order-1842 --max-attempts 3 --trace tr-77 \
	    <<<"order=1842" >/dev/null
	at_ms $((T + 1000)) spool-claim --owner w1 --lease 10s >/dev/null
	at_ms $((T + 2000)) spool-finish --class transient \
	    --detail 'HTTP 503 "busy" \ retry' --delay 0 order-1842 "$(lease_token order-1842)" retry \
	    >/dev/null
	at_ms $((T + 3000)) spool-claim --owner w2 --lease 10s >/dev/null
	at_ms $((T + 20000)) spool-claim --owner w3 --lease 10s >/dev/null
	at_ms $((T + 21000)) spool-finish --class invalid-input \
	    --detail 'amount missing' order-1842 3 permanent >/dev/null
	at_ms $((T + 30000)) spool-redrive --by ops --note INC-4411 order-1842 \
	    >/dev/null
	at_ms $((T + 31000)) spool-claim --owner w4 --lease 1m >/dev/null
}

@test "usage lines are the man pages' SYNOPSIS" {
	for cmd in spool-ls spool-show; do
		run -100 --separate-stderr "$cmd" --no-such-option
		equals "$output" ""
		equals "$stderr" "usage: $(synopsis "$cmd")"
	done
}

@test "spool-ls lists dead jobs by default, one ID a line, each once" {
	park_all transient b-2 B.1 a_1 a-1 a.1 Z 0x
	run -0 --separate-stderr spool-ls
	diff -u <(printf '%s\n' b-2 B.1 a_1 a-1 a.1 Z 0x | LC_ALL=C sort) \
	    <(printf '%s\n' "$output" | LC_ALL=C sort)
	equals "$stderr" ""
	equals "$output" "$(spool-ls dead)"
}

@test "spool-ls lists each state, and nothing is an answer: exit 0" {
	run -0 --separate-stderr spool-ls
	equals "$output" ""
	equals "$stderr" ""
	for id in n1 n2 n3; do
		at_ms $T spool-enqueue --id $id <<<"$id" >/dev/null
	done
	at_ms $T spool-enqueue --id later --delay 1h <<<"later" >/dev/null
	# Two of n1-n3 are claimed (which two is up to the directory order);
	# the first of them finishes.
	run -0 at_ms $((T + 1)) spool-claim --owner w -n 2
	finished=$(head -n 1 <<<"$output" | cut -f1)
	at_ms $((T + 2)) spool-finish "$finished" 1 ok >/dev/null
	for state in new leased done dead; do
		run -0 --separate-stderr spool-ls $state
		equals "$(LC_ALL=C sort <<<"$output")" "$(ids_in $state)"
		equals "$stderr" ""
	done
	run -0 spool-ls new
	[ "$(wc -l <<<"$output")" -eq 2 ]
	grep -qx later <<<"$output"
	run -0 spool-ls leased
	[ "$(wc -l <<<"$output")" -eq 1 ]
	run -0 spool-ls done
	equals "$output" "$finished"
	run -0 spool-ls dead
	equals "$output" ""
}

@test "a second file of a job, as a crash leaves one, is not listed or counted" {
	at_ms $T spool-enqueue --id n1 <<<"n1" >/dev/null
	at_ms $T spool-enqueue --id l1 <<<"l1" >/dev/null
	at_ms $T spool-claim --owner w >/dev/null
	leased=$(ids_in leased)
	waiting=$(ids_in new)
	# A lease file under an older token, and a new/ file due 1 ms later
	# in the same leaf: names that only an interrupted move leaves.
	cp "$SPOOL_DIR/leased/$leased,1" "$SPOOL_DIR/leased/$leased,0"
	f=$(find "$SPOOL_DIR/new" -type f)
	cp "$f" "${f%,*},$((T + 1))"
	before=$(snapshot)
	run -0 --separate-stderr spool-ls leased
	equals "$output" "$leased"
	run -0 --separate-stderr spool-ls new
	equals "$output" "$waiting"
	run -0 spool-ls --json new
	equals "$(jq -r .id <<<"$output")" "$waiting"
	run -0 at_ms $T spool-ls -l leased
	[ "$(wc -l <<<"$output")" -eq 2 ]
	# spool-stat counts each job once too.
	equals "$(spool-stat --json | jq -c '[.new, .leased]')" "[1,1]"
	equals "$(snapshot)" "$before"
}

@test "dropped is the part of done that was dropped; --reason keeps it" {
	park p1 invalid-input
	park p2 transient
	at_ms $T spool-enqueue --id ok1 <<<"ok1" >/dev/null
	at_ms $((T + 3000)) spool-claim --owner w >/dev/null
	at_ms $((T + 4000)) spool-finish ok1 "$(lease_token ok1)" ok >/dev/null
	at_ms $((T + 5000)) spool-drop --by ops --note INC-1 p1 >/dev/null
	run -0 --separate-stderr spool-ls done
	equals "$(LC_ALL=C sort <<<"$output")" "$(printf '%s\n' ok1 p1)"
	equals "$stderr" ""
	run -0 spool-ls dropped
	equals "$output" p1
	run -0 spool-ls
	equals "$output" p2
	run -0 spool-ls dropped --reason permanent
	equals "$output" p1
	run -0 spool-ls done --reason permanent
	equals "$output" p1
	run -0 spool-ls dropped --reason exhausted
	equals "$output" ""
}

@test "--reason and --older-than select parked jobs" {
	park perm1 invalid-input
	# exhausted: one attempt allowed, and it was a retry
	at_ms $T spool-enqueue --id exh1 --max-attempts 1 <<<"x" >/dev/null
	at_ms $((T + 60000)) spool-claim --owner w >/dev/null
	at_ms $((T + 61000)) spool-finish --class transient exh1 "$(lease_token exh1)" retry \
	    >/dev/null
	equals "$(state_of exh1)" dead
	run -0 at_ms $((T + 62000)) spool-ls --reason exhausted
	equals "$output" exh1
	run -0 at_ms $((T + 62000)) spool-ls --reason permanent
	equals "$output" perm1
	# perm1 parked at T + 2s, exh1 at T + 61s: at T + 62s they are 60s
	# and 1s old.  At least DUR: 60s is older than 60s.
	run -0 at_ms $((T + 62000)) spool-ls --older-than 60s
	equals "$output" perm1
	run -0 at_ms $((T + 62000)) spool-ls --older-than 60001ms
	equals "$output" ""
	run -0 at_ms $((T + 62000)) spool-ls --older-than 1s
	equals "$(LC_ALL=C sort <<<"$output")" "$(printf '%s\n' exh1 perm1)"
	run -0 at_ms $((T + 62000)) spool-ls --older-than 1s --reason exhausted
	equals "$output" exh1
}

@test "--key and --trace select a key's or a run's jobs; a pipe cancels a run whole" {
	at_ms $T spool-enqueue --id r1 --trace run-42 --key smtp <<<"x" >/dev/null
	at_ms $((T + 5000)) spool-enqueue --id r2 --trace run-42 <<<"x" >/dev/null
	at_ms $((T + 10000)) spool-enqueue --id r3 --trace run-43 --key smtp <<<"x" >/dev/null
	at_ms $((T + 15000)) spool-enqueue --id r4 <<<"x" >/dev/null
	run -0 at_ms $((T + 20000)) spool-claim --owner w
	equals "$(cut -f1 <<<"$output")" r1
	run -0 spool-ls --key smtp new leased
	equals "$output" "$(printf '%s\n' r3 r1)"
	run -0 spool-ls --trace run-42 new leased
	equals "$output" "$(printf '%s\n' r2 r1)"
	run -0 spool-ls --trace run-42 --key smtp new leased
	equals "$output" r1
	run -0 spool-ls --trace run-44 new leased
	equals "$output" ""
	run -0 --separate-stderr bash -c 'spool-ls --trace run-42 new leased |
	    spool-cancel --by ops --note INC-9 -'
	equals "$output" "$(printf '%s\n' r2 r1)"
	equals "$stderr" ""
	equals "$(ids_in dead)" "$(printf '%s\n' r1 r2)"
	equals "$(ids_in new)" "$(printf '%s\n' r3 r4)"
	run -0 spool-ls --trace run-42
	equals "$output" "$(printf '%s\n' r1 r2 | LC_ALL=C sort)"
	check_invariants
}

@test "-0 separates IDs with NUL, for xargs -0" {
	park_all transient a.b x_y-z 0-.-_ 9 A..B
	run -0 --separate-stderr bash -c \
	    'spool-ls -0 | LC_ALL=C sort -z | od -An -c | tr -s " \n" " "'
	equals "$stderr" ""
	# Each ended by a NUL, nothing else.
	expect=$(printf '%s\0' 0-.-_ 9 A..B a.b x_y-z | od -An -c | tr -s ' \n' ' ')
	equals "$output" "$expect"
	run -0 bash -c 'spool-ls -0 | xargs -0 printf "[%s]\n" | LC_ALL=C sort'
	equals "$output" "$(printf '[%s]\n' 0-.-_ 9 A..B a.b x_y-z)"
	run -0 bash -c 'spool-ls -0 --reason exhausted | wc -c'
	equals "$output" 0
}

@test "-l: a header and aligned columns, the whole table" {
	story
	park pi_0001.settle invalid-input
	at_ms $T spool-enqueue --id x-9 --max-attempts 1 <<<"x" >/dev/null
	at_ms $((T + 50000)) spool-claim --owner w9 >/dev/null
	at_ms $((T + 51000)) spool-finish --class unknown-side-effect \
	    --detail 'charged?' x-9 "$(lease_token x-9)" retry >/dev/null
	at_ms $((T + 52000)) spool-enqueue --id zz <<<"x" >/dev/null
	at_ms $((T + 53000)) spool-cancel --by oncall --note INC-7 zz >/dev/null
	run -0 --separate-stderr at_ms $((T + 3600000 + 125000)) spool-ls -l
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<'EOF'
ID              DELIV  DISP    SE   REASON       CLASS                AGE    CYC  BY      NOTE   DETAIL
pi_0001.settle  #1     parked  -    permanent    invalid-input        1h02m  1    -       -      -
x-9             #1     parked  yes  side-effect  unknown-side-effect  1h01m  1    -       -      charged?
zz              #0     parked  -    cancelled    cancelled            1h01m  1    oncall  INC-7  -
EOF
	run -0 at_ms $((T + 31500)) spool-ls -l leased
	diff -u - <(printf '%s\n' "$output") <<'EOF'
ID          DELIV  DISP      OWNER  EXPIRES  AGE    CYC  BY   NOTE
order-1842  #1     redriven  w4     in 59s   500ms  2    ops  INC-4411
EOF
	run -0 at_ms $((T + 31500)) spool-ls -l new
	equals "$output" "ID  DELIV  DISP  DUE  CLASS  AGE  CYC  BY  NOTE  DETAIL"
}

@test "-l: each state its columns; several states, a table each; --class" {
	story
	park p1 rate-limited
	# A retry waits in new/ with its class; a job due later; a lease that
	# ran out.
	at_ms $T spool-enqueue --id r1 <<<"r1" >/dev/null
	at_ms $((T + 40000)) spool-claim --owner w5 >/dev/null
	at_ms $((T + 41000)) spool-finish --class rate-limited --delay 5m \
	    --detail '429' r1 "$(lease_token r1)" retry >/dev/null
	at_ms $((T + 42000)) spool-enqueue --id later --delay 1h <<<"l" >/dev/null
	at_ms $((T + 43000)) spool-enqueue --id gone <<<"g" >/dev/null
	at_ms $((T + 44000)) spool-claim --owner w6 --lease 10s >/dev/null
	run -0 --separate-stderr at_ms $((T + 60000)) spool-ls -l new leased dead
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<'EOF'
new:
ID     DELIV  DISP  DUE        CLASS         AGE  CYC  BY  NOTE  DETAIL
later  #0     -     in 59m42s  -             18s  1    -   -     -
r1     #1     -     in 4m41s   rate-limited  19s  1    -   -     429

leased:
ID          DELIV  DISP      OWNER  EXPIRES  AGE  CYC  BY   NOTE
gone        #1     -         w6     6s ago   16s  1    -    -
order-1842  #1     redriven  w4     in 31s   29s  2    ops  INC-4411

dead:
ID  DELIV  DISP    SE  REASON     CLASS         AGE  CYC  BY  NOTE  DETAIL
p1  #1     parked  -   permanent  rate-limited  58s  1    -   -     -
EOF
	# The plain forms run the states together, in the order given.
	run -0 spool-ls dead leased
	equals "$(sed -n 1p <<<"$output")" p1
	equals "$(sed 1d <<<"$output" | LC_ALL=C sort)" "$(printf '%s\n' gone order-1842)"
	run -0 spool-ls --class rate-limited new dead
	equals "$output" "$(printf '%s\n' r1 p1)"
	run -0 spool-ls --class rate-limited leased
	equals "$output" ""
	run -0 spool-ls --json --class rate-limited new
	equals "$(jq -r '.id + " " + .class' <<<"$output")" "r1 rate-limited"
	# A class as spool-stat spells it gets the name it was meant for.
	run -100 --separate-stderr spool-ls --class rate_limited
	equals "$stderr" "spool-ls: --class: unknown class 'rate_limited': did you mean 'rate-limited'?"
	run -100 --separate-stderr spool-ls --reason permanent dead new
	equals "$stderr" "spool-ls: --reason is for dead, done and dropped jobs"
	run -100 --separate-stderr spool-ls dead limbo
	equals "$stderr" "spool-ls: bad state 'limbo' (new, leased, done, dead or dropped)"
}

@test "-l and --json mark a job whose payload a hand edited as damaged" {
	park p1 transient
	park p2 transient
	printf 'edited by hand\n' >"$SPOOL_DIR/dead/p2"
	run -0 --separate-stderr at_ms $((T + 60000)) spool-ls -l
	equals "$stderr" ""
	diff -u - <(printf '%s\n' "$output") <<'EOF'
ID  DELIV  DISP     SE  REASON     CLASS      AGE  CYC  BY  NOTE  DETAIL
p1  #1     parked   -   permanent  transient  58s  1    -   -     -
p2  #1     damaged  -   permanent  transient  58s  1    -   -     -
EOF
	run -0 spool-ls --json
	equals "$(jq -r '.id + " " + (.damaged | tostring)' <<<"$output" | LC_ALL=C sort)" \
	    "$(printf '%s\n' "p1 false" "p2 true")"
}

@test "--json: one object a line, stable keys, strings escaped" {
	story
	park plain transient
	at_ms $T spool-enqueue --id odd --max-attempts 1 <<<"x" >/dev/null
	at_ms $((T + 5000)) spool-claim --owner w5 >/dev/null
	at_ms $((T + 6000)) spool-finish --class transient \
	    --detail 'say "no" \n \\ {}' odd "$(lease_token odd)" retry >/dev/null
	run -0 --separate-stderr at_ms $((T + 40000)) spool-ls --json
	equals "$stderr" ""
	[ "$(wc -l <<<"$output")" -eq 2 ]
	keys='["id","state","disposition","since","age_ms","created","deadline","eligible","lease_until","owner","trace","key","token","attempts","max_attempts","deliveries","cycles","reason","class","detail","side_effect","redriven","dropped","by","note","acted","payload_size","payload_xxh3","damaged","damage"]'
	while IFS= read -r line; do
		jq -e . <<<"$line" >/dev/null
		equals "$(jq -c keys_unsorted <<<"$line")" "$keys"
	done <<<"$output"
	diff -u - <(jq -sc 'sort_by(.id)[]' <<<"$output") <<EOF
{"id":"odd","state":"dead","disposition":"parked","since":$((T + 6000)),"age_ms":34000,"created":$T,"deadline":$((T + 604800000)),"eligible":null,"lease_until":null,"owner":null,"trace":null,"key":null,"token":6,"attempts":1,"max_attempts":1,"deliveries":1,"cycles":1,"reason":"exhausted","class":"transient","detail":"say \\"no\\" \\\\n \\\\\\\\ {}","side_effect":false,"redriven":false,"dropped":false,"by":null,"note":null,"acted":null,"payload_size":2,"payload_xxh3":"$(printf 'x\n' | xxh_of -)","damaged":false,"damage":null}
{"id":"plain","state":"dead","disposition":"parked","since":$((T + 2000)),"age_ms":38000,"created":$T,"deadline":$((T + 604800000)),"eligible":null,"lease_until":null,"owner":null,"trace":null,"key":null,"token":5,"attempts":1,"max_attempts":5,"deliveries":1,"cycles":1,"reason":"permanent","class":"transient","detail":null,"side_effect":false,"redriven":false,"dropped":false,"by":null,"note":null,"acted":null,"payload_size":17,"payload_xxh3":"$(printf 'payload of plain\n' | xxh_of -)","damaged":false,"damage":null}
EOF
	# The detail comes back byte for byte.
	equals "$(jq -r 'select(.id == "odd") | .detail' <<<"$output")" 'say "no" \n \\ {}'
	run -0 at_ms $((T + 40000)) spool-ls --json leased
	jq -e . <<<"$output" >/dev/null
	diff -u - <(jq -c . <<<"$output") <<EOF
{"id":"order-1842","state":"leased","disposition":"redriven","since":$((T + 31000)),"age_ms":9000,"created":$T,"deadline":$((T + 30000 + 604800000)),"eligible":null,"lease_until":$((T + 91000)),"owner":"w4","trace":"tr-77","key":null,"token":4,"attempts":1,"max_attempts":3,"deliveries":1,"cycles":2,"reason":null,"class":null,"detail":null,"side_effect":false,"redriven":true,"dropped":false,"by":"ops","note":"INC-4411","acted":$((T + 30000)),"payload_size":11,"payload_xxh3":"$(printf 'order=1842\n' | xxh_of -)","damaged":false,"damage":null}
EOF
}

@test "spool-ls refuses bad usage with one line and 100" {
	run -100 --separate-stderr spool-ls limbo
	equals "$output" ""
	equals "$stderr" "spool-ls: bad state 'limbo' (new, leased, done, dead or dropped)"
	run -100 --separate-stderr spool-ls --reason tired
	equals "$stderr" "spool-ls: --reason: unknown reason 'tired' (permanent, exhausted, deadline, side-effect or cancelled)"
	run -100 --separate-stderr spool-ls --reason exhausted new
	equals "$stderr" "spool-ls: --reason is for dead, done and dropped jobs"
	run -100 --separate-stderr spool-ls --key 'a b'
	equals "$stderr" "spool-ls: --key: bad value (letters, digits, '.', '_', '-', starting with a letter or digit, at most 64 bytes)"
	run -100 --separate-stderr spool-ls --trace ''
	equals "$output" ""
	equals "$stderr" "spool-ls: --trace: bad value (letters, digits, '.', '_', '-', starting with a letter or digit, at most 128 bytes)"
	run -100 --separate-stderr spool-ls --older-than soon
	equals "$stderr" "spool-ls: --older-than: bad duration 'soon' (use e.g. 500ms, 30s, 5m, 2h, 7d, 0)"
	for bad in "-l --json" "-0 -l" "-0 --json"; do
		run -100 --separate-stderr spool-ls $bad
		equals "$output" ""
		equals "$stderr" "usage: $(synopsis spool-ls)"
	done
	run -100 --separate-stderr spool-ls -d "$BATS_TEST_TMPDIR"
	equals "$stderr" "spool-ls: $BATS_TEST_TMPDIR: not a spool (no format file; see spool-init(1))"
}

@test "spool-show: the job, its whole delivery history and its audit lines" {
	story
	run -0 --separate-stderr at_ms $((T + 32000)) spool-show order-1842
	equals "$stderr" ""
	diff -u - <(sed -E 's/ testhost:[0-9]+$/ testhost:PID/' <<<"$output") <<'EOF'
id           order-1842
state        leased
disposition  redriven
since        2026-11-30T00:53:51.000Z (1s ago)
created      2026-11-30T00:53:20.000Z
deadline     2026-12-07T00:53:50.000Z
lease        w4 until 2026-11-30T00:54:51.000Z
trace        tr-77
payload      11 bytes, xxh3 b4a2c67cb3f79df1
token        4
attempts     1 of 3
cycles       2 (this one began with a redrive)
reason       -
class        -
detail       -
side-effect  no
acted        2026-11-30T00:53:50.000Z
by           ops
note         INC-4411

CYC  ATT  TOKEN  OWNER  CLAIMED                   ENDED                     END        CLASS          DETAIL
1    1    1      w1     2026-11-30T00:53:21.000Z  2026-11-30T00:53:22.000Z  retry      transient      HTTP 503 "busy" \ retry
1    2    2      w2     2026-11-30T00:53:23.000Z  2026-11-30T00:53:40.000Z  expired    lease-expired  -
1    3    3      w3     2026-11-30T00:53:40.000Z  2026-11-30T00:53:41.000Z  permanent  invalid-input  amount missing
2    1    4      w4     2026-11-30T00:53:51.000Z  -                         -          -              -

TIME                      EVENT    TOKEN  ATTEMPT  CYCLE  ACTOR  REASON     CLASS          PREV  NOTE      WRITER
2026-11-30T00:53:20.000Z  enqueue  0      0        1      -      -          -              -     -         testhost:PID
2026-11-30T00:53:21.000Z  claim    1      1        1      w1     -          -              -     -         testhost:PID
2026-11-30T00:53:22.000Z  retry    1      1        1      w1     -          transient      -     -         testhost:PID
2026-11-30T00:53:23.000Z  claim    2      2        1      w2     -          -              1     -         testhost:PID
2026-11-30T00:53:40.000Z  reclaim  3      3        1      w3     -          lease-expired  2     -         testhost:PID
2026-11-30T00:53:41.000Z  park     3      3        1      w3     permanent  invalid-input  -     -         testhost:PID
2026-11-30T00:53:50.000Z  redrive  3      0        2      ops    -          -              -     INC-4411  testhost:PID
2026-11-30T00:53:51.000Z  claim    4      1        2      w4     -          -              3     -         testhost:PID
EOF
}

@test "spool-show --json: one object, with the history and the audit lines" {
	story
	at_ms $((T + 40000)) spool-finish order-1842 4 ok >/dev/null
	run -0 --separate-stderr at_ms $((T + 41000)) spool-show --json order-1842
	equals "$stderr" ""
	[ "$(wc -l <<<"$output")" -eq 1 ]
	jq -e . <<<"$output" >/dev/null
	equals "$(jq -c 'keys_unsorted' <<<"$output")" '["id","state","disposition","since","age_ms","created","deadline","eligible","lease_until","owner","trace","key","token","attempts","max_attempts","deliveries","cycles","reason","class","detail","side_effect","redriven","dropped","by","note","acted","payload_size","payload_xxh3","damaged","damage","history","audit"]'
	diff -u - <(jq -c '.history[]' <<<"$output") <<EOF
{"cycle":1,"attempt":1,"token":1,"owner":"w1","claimed":$((T + 1000)),"ended":$((T + 2000)),"end":"retry","class":"transient","detail":"HTTP 503 \\"busy\\" \\\\ retry"}
{"cycle":1,"attempt":2,"token":2,"owner":"w2","claimed":$((T + 3000)),"ended":$((T + 20000)),"end":"expired","class":"lease-expired","detail":null}
{"cycle":1,"attempt":3,"token":3,"owner":"w3","claimed":$((T + 20000)),"ended":$((T + 21000)),"end":"permanent","class":"invalid-input","detail":"amount missing"}
{"cycle":2,"attempt":1,"token":4,"owner":"w4","claimed":$((T + 31000)),"ended":$((T + 40000)),"end":"ok","class":null,"detail":null}
EOF
	diff -u - <(jq -c '.audit[] | del(.writer)' <<<"$output") <<'EOF'
{"time":"2026-11-30T00:53:20.000Z","event":"enqueue","id":"order-1842","token":0,"attempt":0,"cycle":1,"actor":null,"reason":null,"class":null,"note":null}
{"time":"2026-11-30T00:53:21.000Z","event":"claim","id":"order-1842","token":1,"attempt":1,"cycle":1,"actor":"w1","reason":null,"class":null,"note":null}
{"time":"2026-11-30T00:53:22.000Z","event":"retry","id":"order-1842","token":1,"attempt":1,"cycle":1,"actor":"w1","reason":null,"class":"transient","note":null}
{"time":"2026-11-30T00:53:23.000Z","event":"claim","id":"order-1842","token":2,"attempt":2,"cycle":1,"actor":"w2","reason":null,"class":null,"note":"1"}
{"time":"2026-11-30T00:53:40.000Z","event":"reclaim","id":"order-1842","token":3,"attempt":3,"cycle":1,"actor":"w3","reason":null,"class":"lease-expired","note":"2"}
{"time":"2026-11-30T00:53:41.000Z","event":"park","id":"order-1842","token":3,"attempt":3,"cycle":1,"actor":"w3","reason":"permanent","class":"invalid-input","note":null}
{"time":"2026-11-30T00:53:50.000Z","event":"redrive","id":"order-1842","token":3,"attempt":0,"cycle":2,"actor":"ops","reason":null,"class":null,"note":"INC-4411"}
{"time":"2026-11-30T00:53:51.000Z","event":"claim","id":"order-1842","token":4,"attempt":1,"cycle":2,"actor":"w4","reason":null,"class":null,"note":"3"}
{"time":"2026-11-30T00:54:00.000Z","event":"ok","id":"order-1842","token":4,"attempt":1,"cycle":2,"actor":"w4","reason":null,"class":null,"note":null}
EOF
	[ "$(jq -r '.audit[].writer' <<<"$output" | grep -cv '^testhost:[0-9]*$')" -eq 0 ]
	equals "$(jq -c '[.state, .disposition, .since, .cycles, .redriven, .acted]' <<<"$output")" "[\"done\",\"redriven\",$((T + 40000)),2,true,$((T + 30000))]"
}

@test "spool-show reads rotated audit logs too, and sorts by time" {
	at_ms $T spool-enqueue --id rot-1 <<<"x" >/dev/null
	at_ms $((T + 1000)) spool-claim --owner w1 >/dev/null
	mv "$SPOOL_DIR/audit/testhost.log" "$SPOOL_DIR/audit/testhost.log.1"
	at_ms $((T + 2000)) spool-finish --class transient rot-1 "$(lease_token rot-1)" retry >/dev/null
	mv "$SPOOL_DIR/audit/testhost.log" "$SPOOL_DIR/audit/testhost.log.0"
	at_ms $((T + 5000)) spool-claim --owner w2 >/dev/null
	# Another host's log, interleaved in time.
	SPOOL_HOST=otherhost at_ms $((T + 6000)) spool-finish rot-1 2 ok >/dev/null
	equals "$(ls "$SPOOL_DIR/audit" | LC_ALL=C sort | tr '\n' ' ')" "otherhost.log testhost.log testhost.log.0 testhost.log.1 "
	run -0 --separate-stderr at_ms $((T + 7000)) spool-show rot-1
	equals "$stderr" ""
	diff -u - <(sed -n '/^TIME /,$p' <<<"$output" |
	    sed -E 's/(testhost|otherhost):[0-9]+$/\1:PID/') <<'EOF'
TIME                      EVENT    TOKEN  ATTEMPT  CYCLE  ACTOR  REASON  CLASS      PREV  NOTE  WRITER
2026-11-30T00:53:20.000Z  enqueue  0      0        1      -      -       -          -     -     testhost:PID
2026-11-30T00:53:21.000Z  claim    1      1        1      w1     -       -          -     -     testhost:PID
2026-11-30T00:53:22.000Z  retry    1      1        1      w1     -       transient  -     -     testhost:PID
2026-11-30T00:53:25.000Z  claim    2      2        1      w2     -       -          1     -     testhost:PID
2026-11-30T00:53:26.000Z  ok       2      2        1      w2     -       -          -     -     otherhost:PID
EOF
}

@test "spool-show: a renewed lease keeps its start; a cancel ends the delivery" {
	at_ms $T spool-enqueue --id c1 <<<"x" >/dev/null
	at_ms $((T + 1000)) spool-claim --owner w1 --lease 10s >/dev/null
	at_ms $((T + 8000)) spool-renew --lease 10s c1 1 >/dev/null
	run -0 at_ms $((T + 9000)) spool-show --json c1
	equals "$(jq -c '[.state, .since, .age_ms, .lease_until]' <<<"$output")" "[\"leased\",$((T + 1000)),8000,$((T + 18000))]"
	at_ms $((T + 9500)) spool-cancel --by ops --note INC-9 c1 >/dev/null
	run -0 at_ms $((T + 10000)) spool-show --json c1
	equals "$(jq -c '[.state, .since, .reason, .class, .side_effect, .by, .note]' <<<"$output")" "[\"dead\",$((T + 9500)),\"cancelled\",\"cancelled\",true,\"ops\",\"INC-9\"]"
	equals "$(jq -c '.history[]' <<<"$output")" "{\"cycle\":1,\"attempt\":1,\"token\":1,\"owner\":\"w1\",\"claimed\":$((T + 1000)),\"ended\":$((T + 9500)),\"end\":\"cancelled\",\"class\":\"cancelled\",\"detail\":null}"
	run -0 at_ms $((T + 10000)) spool-show c1
	grep -qx 'side-effect  may have happened: reconcile, then redrive with --reconciled' <<<"$output"
}

@test "spool-show: no such job is 1, a bad ID is 100, one line each" {
	run -1 --separate-stderr spool-show order-1
	equals "$output" ""
	equals "$stderr" "spool-show: order-1: no such job"
	run -100 --separate-stderr spool-show ../meta
	equals "$output" ""
	equals "$stderr" "spool-show: ../meta: bad ID"
	run -100 --separate-stderr spool-show
	equals "$stderr" "usage: $(synopsis spool-show)"
	run -100 --separate-stderr spool-show a b
	equals "$stderr" "usage: $(synopsis spool-show)"
}

@test "spool-ls and spool-show change nothing and read no payload" {
	story
	park p1 transient
	before=$(snapshot)
	ASAN_OPTIONS=detect_leaks=0 strace -f -y -e trace=openat,open \
	    -o "$BATS_TEST_TMPDIR/trace" sh -c 'spool-ls -l; spool-ls --json leased;
	    spool-show order-1842; spool-show --json p1' >/dev/null
	equals "$(snapshot)" "$before"
	# Every open under a state directory is of a directory (a bucket).
	opened=$(grep -E '= [0-9]+<[^>]*/(new|leased|done|dead)/' \
	    "$BATS_TEST_TMPDIR/trace" | grep -v O_DIRECTORY || true)
	equals "$opened" ""
	grep -q '/meta/order-1842>' "$BATS_TEST_TMPDIR/trace"
}
