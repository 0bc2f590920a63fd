# kmapindex — build, test, fuzz and benchmark with Go alone.
GO      ?= go
FUZZTIME ?= 30s
PKGS    := ./...

.PHONY: all test vet fmt-check fuzz bench

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

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=6 ./bench/ | tee bench.out
