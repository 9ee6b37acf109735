# Fuzzing the parsers of what spool-layout.md specifies: names, sidecar
# records, audit lines, config.  Each tests/fuzz/fuzz_*.c is a libFuzzer
# target, linked against lib/*.c compiled by clang with the fuzzer and
# sanitizer flags into tests/fuzz/obj/ (never lib/*.o: the normal build
# stays gcc's).  Seeds are in tests/fuzz/corpus/TARGET/.
#
#	make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS=fuzz_rec]
#		fuzz each target in turn for FUZZ_SECONDS of wall time
#		(-max_total_time) and print the CPU time it used.  It works in
#		tests/fuzz/obj/work/TARGET (seeded from the corpus); a crash
#		input goes to tests/fuzz/obj/crash/TARGET/ and fails the run.
#	make fuzz-regress
#		run every target once over each input of its corpus: the
#		regression test that tests/78-fuzz.bats runs in make check.
#		Inputs named crash-* reproduce library findings: each must
#		pass once the library is fixed.
#	make fuzz-merge
#		minimise each corpus with libFuzzer's -set_cover_merge=1 (the
#		-merge=1 minimisation, choosing by greedy set cover: the same
#		features from about half the inputs): its named inputs
#		(hand-written seeds, crash-*) stay as they are; the hashed ones
#		are replaced by a small set, from the corpus and obj/work, of
#		inputs that add coverage to the named ones.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS = -g -O1 -fno-omit-frame-pointer -DSPOOL_TESTING $(FUZZ_SAN)
FUZZ_DIR = tests/fuzz
FUZZ_OBJ = $(FUZZ_DIR)/obj
FUZZ_TARGETS = $(patsubst $(FUZZ_DIR)/%.c,%,$(wildcard $(FUZZ_DIR)/fuzz_*.c))
FUZZ_BINS = $(addprefix $(FUZZ_OBJ)/,$(FUZZ_TARGETS))
FUZZ_LIBOBJ = $(patsubst lib/%.c,$(FUZZ_OBJ)/lib/%.o,$(wildcard lib/*.c))
# clang warns where gcc does not: the library's -Werror stays gcc's.
FUZZ_WARN = $(filter-out -Werror,$(WARN))
clean: fuzz-clean

# A compiler that cannot link a libFuzzer target fails here, by name.
fuzz-cc:
	@mkdir -p $(FUZZ_OBJ)
	@printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
	    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
	    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)' \
	    '{ (void)d; (void)n; return 0; }' >$(FUZZ_OBJ)/cc-test.c
	@$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) -o $(FUZZ_OBJ)/cc-test \
	    $(FUZZ_OBJ)/cc-test.c >$(FUZZ_OBJ)/cc-test.log 2>&1 || { \
	    sed 's/^/  /' $(FUZZ_OBJ)/cc-test.log >&2; \
	    echo "fuzz: '$(FUZZ_CC)' cannot build a libFuzzer target:" \
	    "install the Debian packages clang and libclang-rt-14-dev" \
	    "(tests/deps.sh), or set FUZZ_CC" >&2; exit 1; }

$(FUZZ_OBJ)/lib/%.o: lib/%.c lib/spool.h lib/internal.h | fuzz-cc
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_WARN) \
	    -Ilib -c -o $@ $<

$(FUZZ_BINS): $(FUZZ_OBJ)/%: $(FUZZ_DIR)/%.c $(FUZZ_DIR)/fuzz.h \
    $(FUZZ_LIBOBJ) | fuzz-cc
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(WARN) -Ilib -o $@ $< \
	    $(FUZZ_LIBOBJ) -luuid -lxxhash -luring

fuzz-build: $(FUZZ_BINS)

# Per target: fuzz for FUZZ_SECONDS from its corpus (less the crash-*
# inputs of reported findings, whose checks FUZZ_SKIP_KNOWN=1 turns off:
# see check_known in fuzz.h), then one line with the CPU time the fuzzer
# used (the shell's times: user + system of its children) and its runs.
# A crash ends that target's run and fails make fuzz; the others still run.
fuzz: $(FUZZ_BINS)
	@status=0; for t in $(FUZZ_TARGETS); do \
	    w=$(FUZZ_OBJ)/work/$$t; c=$(FUZZ_OBJ)/crash/$$t; \
	    mkdir -p $$w $$c; \
	    for f in $(FUZZ_DIR)/corpus/$$t/*; do case $${f##*/} in \
	        crash-*) ;; *) [ -e $$w/$${f##*/} ] || cp $$f $$w/ ;; esac; \
	    done; \
	    echo "$$t: fuzzing for $(FUZZ_SECONDS) s (log: $(FUZZ_OBJ)/$$t.log)"; \
	    cpu=$$( ( FUZZ_SKIP_KNOWN=1 $(FUZZ_OBJ)/$$t \
	        -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        -artifact_prefix=$$c/ $$w >$(FUZZ_OBJ)/$$t.log 2>&1; \
	        echo $$? >$(FUZZ_OBJ)/$$t.status; times ) | awk 'NR == 2 { \
	        split($$1, u, /[ms]/); split($$2, s, /[ms]/); \
	        printf "%.2f", u[1] + u[2] / 60 + s[1] + s[2] / 60 }'); \
	    runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' \
	        $(FUZZ_OBJ)/$$t.log); \
	    echo "$$t: $$cpu CPU-minutes, $${runs:-?} runs"; \
	    [ "$$(cat $(FUZZ_OBJ)/$$t.status)" = 0 ] && continue; \
	    status=1; echo "$$t: CRASH, input saved in $$c/:" >&2; \
	    grep -m 3 -E 'property failed|ERROR: |runtime error' \
	        $(FUZZ_OBJ)/$$t.log | sed 's/^/    /' >&2; \
	done; exit $$status

# Every corpus input once: the inputs of reported findings (crash-*) each
# in a process of its own, so that each one failing is named, and the
# others all in one.
fuzz-regress: $(FUZZ_BINS)
	@status=0; for t in $(FUZZ_TARGETS); do \
	    c=$(FUZZ_DIR)/corpus/$$t; log=$(FUZZ_OBJ)/$$t.regress.log; \
	    set -- $$(ls $$c | grep -v '^crash-' | sed "s|^|$$c/|"); n=$$#; \
	    a=-artifact_prefix=$(FUZZ_OBJ)/crash/$$t/; \
	    mkdir -p $(FUZZ_OBJ)/crash/$$t; \
	    if [ $$n -gt 0 ] && ! FUZZ_SKIP_KNOWN=0 $(FUZZ_OBJ)/$$t -runs=1 $$a \
	        "$$@" >$$log 2>&1; \
	    then \
	        status=1; \
	        echo "FAIL $$t: $$(sed -n 's/^Running: //p' $$log | tail -n 1)"; \
	        grep -m 3 -E 'property failed|ERROR: |runtime error' $$log | \
	            sed 's/^/    /'; \
	        continue; \
	    fi; \
	    for f in $$(ls $$c | grep '^crash-'); do \
	        n=$$((n + 1)); \
	        FUZZ_SKIP_KNOWN=0 $(FUZZ_OBJ)/$$t $$a $$c/$$f >$$log 2>&1 && \
	            continue; \
	        status=1; echo "FAIL $$t: $$c/$$f"; \
	        grep -m 3 -E 'property failed|ERROR: |runtime error' $$log | \
	            sed 's/^/    /'; \
	    done; \
	    echo "$$t: $$n inputs run"; \
	done; exit $$status

# Known findings are checked here (FUZZ_SKIP_KNOWN=0): an input that hits
# one is left out, so that only the crash-* inputs stand for them.  Named
# inputs are those whose names are not libFuzzer's 40 hex digits.
FUZZ_HASHED = '^[0-9a-f]\{40\}$$'
fuzz-merge: $(FUZZ_BINS)
	@for t in $(FUZZ_TARGETS); do \
	    c=$(FUZZ_DIR)/corpus/$$t; m=$(FUZZ_OBJ)/merge/$$t; \
	    rm -rf $$m; mkdir -p $$m/named $$m/hashed $(FUZZ_OBJ)/work/$$t \
	        $(FUZZ_OBJ)/crash/$$t; \
	    for f in $$(ls $$c | grep -v $(FUZZ_HASHED)); do \
	        cp $$c/$$f $$m/named/; done; \
	    for f in $$(ls $$c | grep $(FUZZ_HASHED)); do \
	        cp $$c/$$f $$m/hashed/; done; \
	    FUZZ_SKIP_KNOWN=0 $(FUZZ_OBJ)/$$t -set_cover_merge=1 \
	        -artifact_prefix=$(FUZZ_OBJ)/crash/$$t/ $$m/named $$m/hashed \
	        $(FUZZ_OBJ)/work/$$t >$(FUZZ_OBJ)/$$t.merge.log 2>&1 || \
	        { echo "$$t: merge failed, see $(FUZZ_OBJ)/$$t.merge.log" >&2; \
	        exit 1; }; \
	    rm -f $$(ls $$c | grep $(FUZZ_HASHED) | sed "s|^|$$c/|"); \
	    for f in $$(ls $$m/named | grep $(FUZZ_HASHED)); do \
	        cp $$m/named/$$f $$c/; done; \
	    echo "$$t: $$(ls $$c | wc -l) inputs" \
	        "($$(ls $$c | grep -c $(FUZZ_HASHED)) found by the fuzzer)," \
	        "$$(cat $$c/* | wc -c) bytes"; \
	done

# What the build made; the search's own results (obj/work, obj/crash) stay.
fuzz-clean:
	rm -rf $(FUZZ_OBJ)/lib $(FUZZ_OBJ)/merge $(FUZZ_OBJ)/cc-test* \
	    $(FUZZ_OBJ)/*.log $(FUZZ_OBJ)/*.status \
	    $(addprefix $(FUZZ_OBJ)/,$(FUZZ_TARGETS))

.PHONY: fuzz fuzz-build fuzz-cc fuzz-regress fuzz-merge fuzz-clean
