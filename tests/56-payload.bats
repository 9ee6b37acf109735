#!/usr/bin/env bats
# A payload's size and checksum (spool-layout.md, "The sidecar", payload=):
# recorded at enqueue, shown by spool-show, checked by spool-fsck (the size
# always, the checksum with --verify) and by a redrive, which hands back
# exactly the bytes enqueued unless told --edited.  Records written before
# checksums were kept are unverified, never damaged.

load helpers

T=1796026336000

# The payload= field of ID's last record.
payload_of() {
	last_rec "$1" payload | sed 's/^payload=//'
}

# park ID: enqueue ID with its payload on stdin, claim it, finish permanent.
park() {
	at_ms "$T" spool-enqueue --id "$1" >/dev/null
	at_ms "$T" spool-claim --owner w1 >/dev/null
	at_ms "$T" spool-finish "$1" "$(lease_token "$1")" permanent >/dev/null
}

@test "enqueue records the payload's size and XXH3-64; spool-show prints them" {
	printf 'hello\n' | at_ms "$T" spool-enqueue --id j1 >/dev/null
	: | at_ms "$T" spool-enqueue --id empty >/dev/null
	equals "$(payload_of j1)" "6:$(printf 'hello\n' | xxh_of -)"
	equals "$(payload_of empty)" "0:$(xxh_of /dev/null)"
	run -0 spool-show j1
	equals "$(grep '^payload' <<<"$output")" "payload      6 bytes, xxh3 99fc819aaba2462a"
	run -0 spool-show --json j1
	equals "$(jq -c '[.payload_size, .payload_xxh3]' <<<"$output")" '[6,"99fc819aaba2462a"]'
	# Every later record carries it.
	at_ms "$T" spool-claim --owner w1 -n 2 >/dev/null
	equals "$(payload_of j1)" 6:99fc819aaba2462a
	fsck_clean
}

@test "a payload cut to 0 bytes is found by spool-fsck, and --repair leaves it to a person" {
	printf 'hello\n' | at_ms "$T" spool-enqueue --id j1 >/dev/null
	: >"$(path_of j1)"
	run -1 spool-fsck
	equals "$output" "j1: its payload is 0 bytes, its record says 6: changed by hand, or torn; park it with spool-cancel, check it, then spool-redrive --edited or spool-drop"
	before=$(snapshot)
	run -1 spool-fsck --repair
	equals "$(snapshot)" "$before"
}

@test "spool-show of a payload edited to another size: shown, damaged, 100, and what settles it" {
	printf 'amount=100\n' | park j1
	printf 'amount=1000\n' >"$(path_of j1)"
	printf 'q\n' | at_ms "$T" spool-enqueue --id q1 >/dev/null
	printf 'qq\n' >"$(path_of q1)"
	run -100 --separate-stderr at_ms "$T" spool-show j1
	equals "$(sed -n 1,4p <<<"$output")" "$(printf '%s\n' 'id           j1' \
	    'damaged      its file is not the size its record says: edited by hand, or torn' \
	    'state        dead' 'disposition  parked')"
	equals "$(grep '^payload' <<<"$output")" "payload      11 bytes, xxh3 $(printf 'amount=100\n' | xxh_of -)"
	equals "$stderr" "spool-show: j1: its payload is not the size its record says: changed by hand, or torn; check it, then spool-redrive --edited or spool-drop"
	run -100 --separate-stderr at_ms "$T" spool-show --json j1
	equals "$(jq -c '[.state, .damaged, .damage]' <<<"$output")" '["dead",true,"its file is not the size its record says: edited by hand, or torn"]'
	equals "$stderr" "spool-show: j1: its payload is not the size its record says: changed by hand, or torn; check it, then spool-redrive --edited or spool-drop"
	# A queued job is parked first, as spool-fsck says.
	run -100 --separate-stderr at_ms "$T" spool-show q1
	equals "$(sed -n 2p <<<"$output")" "damaged      its file is not the size its record says: edited by hand, or torn"
	equals "$stderr" "spool-show: q1: its payload is not the size its record says: changed by hand, or torn; park it with spool-cancel, check it, then spool-redrive --edited or spool-drop"
	# Settled, it is shown as any other: 0, nothing on stderr.
	at_ms "$T" spool-redrive --by ops --note INC-1 --edited j1 >/dev/null
	run -0 --separate-stderr at_ms "$T" spool-show j1
	equals "$stderr" ""
	equals "$(grep -c '^damaged' <<<"$output")" 0
}

@test "a byte changed in place: the size agrees, --verify finds it" {
	printf 'amount=100\n' | park j1
	printf 'amount=900\n' >"$(path_of j1)"
	fsck_clean
	run -1 spool-fsck --verify
	equals "$output" "j1: its payload is not the bytes its checksum says: changed by hand, or damaged; check it, then spool-redrive --edited or spool-drop"
}

@test "a redrive hands back the bytes enqueued: an edited payload needs --edited" {
	printf 'amount=100\n' | park j1
	printf 'amount=900\n' >"$(path_of j1)"
	before=$(snapshot)
	run -1 --separate-stderr at_ms $((T + 1)) spool-redrive --by ops --note INC-1 j1
	equals "$output" ""
	equals "$stderr" "spool-redrive: j1: its payload is not the one enqueued (changed by hand?): check it, then redrive with --edited to send it as it is"
	equals "$(snapshot)" "$before"
	# The dry run says so too, having read it.
	run -1 --separate-stderr bash -c "echo j1 | SPOOL_TEST_NOW=$((T + 1)) spool-redrive --by ops --note INC-1 --dry-run -"
	equals "$(head -n 1 <<<"$stderr")" "spool-redrive: j1: its payload is not the one enqueued (changed by hand?): check it, then redrive with --edited to send it as it is"
	equals "$(snapshot)" "$before"
	run -0 --separate-stderr at_ms $((T + 2)) spool-redrive --by ops --note INC-2 --edited j1
	equals "$output" j1
	equals "$(payload_of j1)" "$(printf 'amount=900\n' | tee "$BATS_TEST_TMPDIR/new" | wc -c):$(xxh_of "$BATS_TEST_TMPDIR/new")"
	equals "$(last_rec j1 ev by note)" "$(printf 'ev=redrive\nby=ops\nnote=INC-2')"
	equals "$(audit_events | tail -n 1)" "redrive j1 1 0 2 ops - - INC-2"
	fsck_clean
	spool-fsck --verify
}

@test "records of format 1 have no checksum: unverified, never damaged; a redrive adds one" {
	rm -rf "$SPOOL_DIR"
	mkdir "$BATS_TEST_TMPDIR/old"
	tar -C "$BATS_TEST_TMPDIR/old" -xzf "$BATS_TEST_DIRNAME/fixtures/format1-spool.tar.gz"
	mv "$BATS_TEST_TMPDIR/old/spool" "$SPOOL_DIR"
	export SPOOL_HOST=oldhost
	run -0 spool-show dead-1
	equals "$(grep '^payload' <<<"$output")" "payload      unverified: enqueued before records kept a size and checksum"
	run -0 spool-fsck --verify
	equals "$output" ""
	run -0 at_ms $((T + 3600100)) spool-redrive --by ops --note INC-3 dead-1
	equals "$(payload_of dead-1)" "9:$(printf 'dead one\n' | xxh_of -)"
	spool-fsck --verify
}
