# The benchmark suite, whose rows and targets bench/README.md states:
# bench/bench.sh runs it, bench/report.awk prints the table; the drivers
# are C, built here into bench/results/bin/ (ignored by git, as every
# result under bench/results/ is).
#
#	make bench		every row but the 1,000,000-job ones: some
#				13 minutes on 2 cores
#	make bench-full		adds claim latency and peak RSS at 1,000,000
#				jobs
#	make bench-many		rows 10 and 11 alone: many workers, and
#				spool-run
#	make bench-limits	row 12 alone: a claim under a limit
#
# Both exit 0 when every row ran, whether or not the targets were met; a
# missed target is a MISS in the table, not a failure.  Results:
# bench/results/table.txt, results.csv, results.json, raw.csv.  make check
# never runs any of it.
BENCH_BIN = bench/results/bin
BENCH_TOOLS = $(BENCH_BIN)/qbench $(BENCH_BIN)/depth $(BENCH_BIN)/peakrss \
    $(BENCH_BIN)/sidecars $(BENCH_BIN)/true $(BENCH_BIN)/true-dyn \
    $(BENCH_BIN)/gocycle

# libpq's headers, where Debian's libpq-dev puts them.
PQ_CPPFLAGS = -I/usr/include/postgresql

# qbench: its driver, and a file for each system it times (qbench.h).
QBENCH_SRC = bench/qbench.c bench/qbench-os.c bench/qbench-many.c \
    bench/qbench-floor.c bench/qbench-spool.c bench/qbench-run.c \
    bench/qbench-sqlite.c bench/qbench-pg.c bench/qbench-beanstalkd.c \
    bench/qbench-nq.c bench/qbench-python.c bench/qbench-batch.c

$(BENCH_BIN)/qbench: $(QBENCH_SRC) bench/qbench.h bench/bench.h lib/spool.h \
    lib/libspool.a
	@mkdir -p $(BENCH_BIN)
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) $(PQ_CPPFLAGS) -o $@ \
	    $(QBENCH_SRC) lib/libspool.a -lsqlite3 -lpq $(LDLIBS) -lpthread

$(BENCH_BIN)/depth: bench/depth.c bench/bench.h lib/spool.h lib/libspool.a
	@mkdir -p $(BENCH_BIN)
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) -o $@ bench/depth.c \
	    lib/libspool.a $(LDLIBS) -lpthread

$(BENCH_BIN)/sidecars: bench/sidecars.c
	@mkdir -p $(BENCH_BIN)
	$(CC) $(CFLAGS) $(WARN) -o $@ bench/sidecars.c

$(BENCH_BIN)/peakrss: bench/peakrss.c
	@mkdir -p $(BENCH_BIN)
	$(CC) $(CFLAGS) $(WARN) -o $@ bench/peakrss.c

# Row 3's Go client: the package in go/, offline, as tests/go-tap builds it.
$(BENCH_BIN)/gocycle: bench/gocycle/main.go bench/gocycle/go.mod $(wildcard go/*.go)
	@mkdir -p $(BENCH_BIN)
	cd bench/gocycle && GOPROXY=off GOFLAGS=-mod=mod \
	    GOCACHE=$(CURDIR)/go/.cache/build GOPATH=$(CURDIR)/go/.cache/gopath \
	    go build -o $(CURDIR)/$@ .

# Static, so that the spawn floor holds no dynamic loading.
$(BENCH_BIN)/true: bench/true.c
	@mkdir -p $(BENCH_BIN)
	$(CC) -O2 $(WARN) -static -o $@ bench/true.c

# The same no-op linked as the commands are (Makefile, CMD_LIBS): libc
# shared, which the loader maps at every start, and, with STATIC_DEPS=0,
# each of their libraries too.
$(BENCH_BIN)/true-dyn: bench/true.c
	@mkdir -p $(BENCH_BIN)
	$(CC) -O2 $(WARN) -o $@ bench/true.c -Wl,--no-as-needed $(CMD_LIBS)

# SQLite's headers and shell, libpq's headers, PostgreSQL's server,
# beanstalkd, nq and strace come from Debian:
# bench/deps.sh installs them as root, or names them and stops.
bench-deps:
	@bench/deps.sh

bench-tools: bench-deps
	@$(MAKE) --no-print-directory test-build python $(BENCH_TOOLS)

bench: bench-tools
	@bench/bench.sh

bench-full: bench-tools
	@BENCH_FULL=1 bench/bench.sh

# Rows 10 and 11 alone: many workers, and spool-run.
bench-many: bench-tools
	@BENCH_ROWS=many bench/bench.sh

# Row 12 alone: the library's cycle of keyed jobs under a limit.
bench-limits: bench-tools
	@BENCH_ROWS=limits bench/bench.sh

clean: bench-clean

bench-clean:
	rm -f $(BENCH_TOOLS)

.PHONY: bench bench-full bench-many bench-limits bench-deps bench-tools \
    bench-clean
