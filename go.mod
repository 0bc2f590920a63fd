module github.com/kmapindex/kmapindex

go 1.26.0

require (
	github.com/RoaringBitmap/roaring/v2 v2.30.0 // indirect
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/mschoch/smat v0.2.0 // indirect
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da // indirect
	golang.org/x/sys v0.48.0 // indirect
)

tool golang.org/x/perf/cmd/benchstat
