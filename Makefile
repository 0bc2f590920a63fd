# kmapindex — build, test, fuzz and benchmark with Go alone.
GO      ?= go
FUZZTIME ?= 30s
PKGS    := ./...

.PHONY: all test vet cross fmt-check fuzz fuzz-long bench bench-ci bench-full bench-resolver

all: test

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# cross vets the code and its tests for CROSS's systems: 32-bit Linux,
# and Windows, where there are neither perf events nor Unix's special
# files (the other Unixes build as Linux less perfevent's sessions). From
# a cold build cache each takes about 2 minutes here.
CROSS ?= linux/386 windows/amd64
cross:
	@for p in $(CROSS); do echo "go vet ($$p)"; GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet $(PKGS) || exit 1; done

# -timeout: ingest/attrib's tests take about 8 minutes under the race
# detector on 2 cores, near go test's default 10 minutes per package.
test: fmt-check vet
	$(GO) test -race -count=1 -timeout 30m $(PKGS)

# fuzz runs every fuzz target for FUZZTIME each (scripts/fuzzall.sh: go test
# allows one target per run; it tells Go 1.26's end-of-fuzztime race,
# golang/go#75804, from a failing input).
fuzz:
	@GO=$(GO) scripts/fuzzall.sh $(FUZZTIME) $(PKGS)

# fuzz-long runs every fuzz target for FUZZLONG each (default 10m).
FUZZLONG ?= 10m
fuzz-long:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZLONG)

# bench runs the suite (n up to MAXN, 6 samples of BENCHTIME each) into
# BENCHOUT, then shows it twice: benchstat with one column per implementation
# (its baseline is the first one seen, btree), and kbench's comparison
# against the list reference with speedups, failing unless the B-tree is
# MIN_SPEEDUP times faster than the list at the largest n (0: no gate).
# bench-full adds n=100000 with one sample each: the list's runs there take
# minutes apiece (about 25 minutes in all on 2 cores).
MAXN        ?= 10000
BENCHTIME   ?= 1s
COUNT       ?= 6
BENCHOUT    ?= bench.out
MIN_SPEEDUP ?= 10
# The gate covers the index operations; end-to-end Ingest is dominated by
# decoding and symbolization and is reported, not gated.
GATE        ?= ^(KcoreOrder|MergeIn|FixupInsert|LoadKcore|Lookup|LookupClustered)$$

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=$(COUNT) -benchtime=$(BENCHTIME) ./bench/ -args -maxn=$(MAXN) | tee $(BENCHOUT)
	@grep -q '^ok' $(BENCHOUT) || { echo "make bench: go test failed; see $(BENCHOUT)" >&2; exit 1; }
	$(GO) tool benchstat -col /impl $(BENCHOUT)
	$(GO) run ./cmd/kbench bench -min-speedup $(MIN_SPEEDUP) -gate '$(GATE)' -in $(BENCHOUT)

bench-full:
	@$(MAKE) --no-print-directory bench MAXN=100000 COUNT=1 BENCHOUT=bench-full.out

# bench-ci is the short benchmark gate: n up to 10000, 6 samples of 0.1s,
# and the B-tree at least 10x faster than the list at n=10000 in every
# benchmark (about 1 minute on 2 shared cores).
bench-ci:
	@$(MAKE) --no-print-directory bench MAXN=10000 BENCHTIME=0.1s BENCHOUT=bench-ci.out MIN_SPEEDUP=10

# bench-resolver times concurrent lookups while one writer applies updates
# (package resolver: the resolver, a copy-on-write index.Maps, an RWMutex,
# a rebuilt snapshot, the list) and what publishing a version costs, into
# RESOLVEROUT, then shows it with benchstat, one column per implementation.
RESOLVEROUT ?= resolver-bench.out
bench-resolver:
	$(GO) test -run='^$$' -bench='ConcurrentFind|Publish' -benchmem -count=$(COUNT) -benchtime=0.2s ./resolver/ | tee $(RESOLVEROUT)
	@grep -q '^ok' $(RESOLVEROUT) || { echo "make bench-resolver: go test failed; see $(RESOLVEROUT)" >&2; exit 1; }
	$(GO) tool benchstat -col /impl $(RESOLVEROUT)

# perf-bench makes a large system-wide recording, with callchains when
# PERF_BENCH_G=-g (scripts/bigrecord.sh: PERF_BENCH_SECONDS of two busy
# CPUs at PERF_BENCH_FREQ Hz, 1.1-1.4 M samples with the defaults on
# this project's machines, with or without -g (12 s gave 0.5-0.9 M on
# the Turin VM); needs
# root and perf) in PERF_BENCH_DIR, then times kbench report against perf
# report and perf script on it, runs interleaved, PERF_BENCH_RUNS times
# (scripts/perfbench.sh): every run, the medians, perf/kbench ratios and
# whether the outputs agree. PERF_BENCH_RECORD=0 times the recording
# already there. PERF_BENCH_WORKLOAD=compile records gcc compiling
# instead (its -g children table has hundreds of thousands of rows).
PERF_BENCH_DIR     ?= /tmp/kmapindex-perf-bench
PERF_BENCH_SECONDS ?= 30
PERF_BENCH_FREQ    ?= 50000
PERF_BENCH_RUNS    ?= 3
PERF_BENCH_RECORD  ?= 1
PERF_BENCH_G       ?=
PERF_BENCH_WORKLOAD ?= ls

.PHONY: perf-bench
perf-bench:
	@test -x /usr/bin/time || { echo "make perf-bench: needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }
	@if [ "$(PERF_BENCH_RECORD)" != 0 ] || [ ! -s $(PERF_BENCH_DIR)/big.data ]; then \
	  echo scripts/bigrecord.sh $(PERF_BENCH_DIR) $(PERF_BENCH_SECONDS) $(PERF_BENCH_G); \
	  PERF_FREQ=$(PERF_BENCH_FREQ) BIGRECORD_WORKLOAD=$(PERF_BENCH_WORKLOAD) scripts/bigrecord.sh $(PERF_BENCH_DIR) $(PERF_BENCH_SECONDS) $(PERF_BENCH_G); \
	fi
	$(GO) build -o $(PERF_BENCH_DIR)/kbench ./cmd/kbench
	scripts/perfbench.sh $(PERF_BENCH_DIR) $(PERF_BENCH_RUNS) $(PERF_BENCH_DIR)/kbench

# pgo remakes cmd/kbench/default.pgo, the CPU profile go build, go run
# and go test optimize kbench with (profile-guided optimization, Go 1.21
# on): three system-wide recordings in PGO_DIR (bigrecord.sh: -a, -a -g,
# and -g of a gcc build; needs root, perf and gcc), then
# scripts/pgoprofile.sh on a build without the old profile. Remake it
# when the hot paths move.
PGO_DIR     ?= /tmp/kmapindex-pgo
PGO_SECONDS ?= 12

.PHONY: pgo
pgo:
	PERF_FREQ=50000 scripts/bigrecord.sh $(PGO_DIR)/a $(PGO_SECONDS)
	PERF_FREQ=50000 scripts/bigrecord.sh $(PGO_DIR)/ag $(PGO_SECONDS) -g
	PERF_FREQ=50000 BIGRECORD_WORKLOAD=compile scripts/bigrecord.sh $(PGO_DIR)/gcc $(PGO_SECONDS) -g
	$(GO) build -pgo=off -o $(PGO_DIR)/kbench ./cmd/kbench
	scripts/pgoprofile.sh cmd/kbench/default.pgo $(PGO_DIR)/kbench $(PGO_DIR)/a/big.data $(PGO_DIR)/ag/big.data $(PGO_DIR)/gcc/big.data

# dwarf-bench is perf-bench for a --call-graph dwarf recording of a gcc
# compile (scripts/dwarfrecord.sh: DWARF_BENCH_FUNCS generated functions;
# needs root, perf and gcc) in DWARF_BENCH_DIR: perf script and perf
# report --children take minutes a run on it. DWARF_BENCH_RECORD=0 times
# the recording already there.
DWARF_BENCH_DIR    ?= /tmp/kmapindex-dwarf-bench
DWARF_BENCH_FUNCS  ?= 3000
DWARF_BENCH_RUNS   ?= 3
DWARF_BENCH_RECORD ?= 1

.PHONY: dwarf-bench
dwarf-bench:
	@test -x /usr/bin/time || { echo "make dwarf-bench: needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }
	@if [ "$(DWARF_BENCH_RECORD)" != 0 ] || [ ! -s $(DWARF_BENCH_DIR)/big.data ]; then \
	  echo scripts/dwarfrecord.sh $(DWARF_BENCH_DIR) $(DWARF_BENCH_FUNCS); \
	  scripts/dwarfrecord.sh $(DWARF_BENCH_DIR) $(DWARF_BENCH_FUNCS); \
	fi
	$(GO) build -o $(DWARF_BENCH_DIR)/kbench ./cmd/kbench
	scripts/perfbench.sh $(DWARF_BENCH_DIR) $(DWARF_BENCH_RUNS) $(DWARF_BENCH_DIR)/kbench
