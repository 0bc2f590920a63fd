# kmapindex — build, test, fuzz and benchmark with Go alone.
GO      ?= go
FUZZTIME ?= 30s
PKGS    := ./...

.PHONY: all test vet fmt-check fuzz bench bench-ci

all: test

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

test: fmt-check vet
	$(GO) test -race -count=1 $(PKGS)

# fuzz runs every fuzz target for FUZZTIME each (go test allows one target per run).
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t"; $(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done

# bench runs the suite (n up to MAXN, 6 samples of BENCHTIME each) into
# BENCHOUT, then shows it twice: benchstat with one column per implementation
# (its baseline is the first one seen, btree), and kbench's comparison
# against the list reference with speedups, failing unless the B-tree is
# MIN_SPEEDUP times faster than the list at the largest n (0: no gate).
# The full suite takes a long while: the list's n=100000 runs are slow.
MAXN        ?= 100000
BENCHTIME   ?= 1s
BENCHOUT    ?= bench.out
MIN_SPEEDUP ?= 10

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=6 -benchtime=$(BENCHTIME) ./bench/ -args -maxn=$(MAXN) | tee $(BENCHOUT)
	@grep -q '^ok' $(BENCHOUT) || { echo "make bench: go test failed; see $(BENCHOUT)" >&2; exit 1; }
	$(GO) tool benchstat -col /impl $(BENCHOUT)
	$(GO) run ./cmd/kbench bench -min-speedup $(MIN_SPEEDUP) -in $(BENCHOUT)

# bench-ci is the short benchmark gate: n up to 10000, 6 samples of 0.1s,
# and the B-tree at least 10x faster than the list at n=10000 in every
# benchmark (about 1 minute on 2 shared cores).
bench-ci:
	@$(MAKE) --no-print-directory bench MAXN=10000 BENCHTIME=0.1s BENCHOUT=bench-ci.out MIN_SPEEDUP=10
