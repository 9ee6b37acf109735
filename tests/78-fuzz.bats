#!/usr/bin/env bats
# Fuzzing, short version: every libFuzzer target of tests/fuzz/ runs once
# over each input of its corpus under ASan and UBSan, the inputs of
# reported findings (crash-*) included.  The long search is make fuzz.

bats_require_minimum_version 1.5.0

setup() {
	cd "$BATS_TEST_DIRNAME/.." || exit 1
}

@test "every fuzz target takes every input of its corpus" {
	run make --no-print-directory -j2 fuzz-regress
	printf '%s\n' "$output"		# shown if the test fails
	[ "$status" -eq 0 ]
}

@test "without a libFuzzer compiler, fuzz-regress fails and names the packages" {
	run -2 make --no-print-directory FUZZ_CC=/nonexistent/clang fuzz-regress
	[[ "$output" == *"install the Debian packages clang and libclang-rt-14-dev"* ]]
}
