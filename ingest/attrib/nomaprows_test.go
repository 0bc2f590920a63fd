package attrib

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// childLine is what a line of a children table shows and sorts by.
type childLine struct {
	key       Key
	acc, self Counts
	first     keyCounts
	rank      int32
}

// linesOf returns l's lines.
func linesOf(l tableLines) []childLine {
	out := make([]childLine, l.len())
	for i := range out {
		if r, nm := l.at(i); nm != nil {
			out[i] = childLine{nm.key(0), nm.acc, nm.self, nm.firstKey(), nm.rank}
		} else {
			out[i] = childLine{r.key, r.acc[0], r.c[0], *r.first, r.rank}
		}
	}
	return out
}

// A one-event children table's rows without a map, kept compact
// (noMapRows) and merged with the other rows, are its rows as tableRows
// are, line for line and in order: over random tables of many such rows
// whose counts tie often, with dups (some too large for a tag), levels,
// rows of the Self column or the Children column alone, hidden keys, all
// of them ranked or none, in one shard and in two.
func TestNoMapRowsAsTableRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	dsos := []string{"/usr/lib/libc.so.6", "/opt/libc.so.6", "[kernel.kallsyms]", "/bin/app"}
	syms := []string{"main", "function_a", symbols.Unknown}
	dups := []int32{0, 0, 0, 1, 2, 1 << 15, 1<<15 + 1}
	compacted := 0
	for i := range 24 {
		m, acc, hidden := map[Key]Counts{}, map[Key]Counts{}, map[Key]bool{}
		ranked := i%2 == 0
		ranks := map[rankKey]int32{}
		rows := 200 + rng.IntN(3*parallelRowsMin)
		for range rows {
			k := Key{DSO: symbols.Unknown, Sym: symbols.Unknown, Kernel: rng.IntN(3) == 0, Addr: uint64(rng.IntN(rows/4)) << 2}
			switch {
			case rng.IntN(4) == 0:
				k.DSO, k.Sym = dsos[rng.IntN(len(dsos))], syms[rng.IntN(len(syms))]
			case rng.IntN(8) == 0:
				k.Hyper, k.Kernel = true, false
			}
			if k.DSO == symbols.Unknown {
				k.dup = dups[rng.IntN(len(dups))]
				if ranked {
					rk := rankKeyOf(Key{DSO: k.DSO, Sym: k.Sym, Addr: k.Addr, dup: k.dup})
					if _, ok := ranks[rk]; !ok {
						ranks[rk] = int32(rng.IntN(1 << 20))
					}
				}
			}
			c := Counts{Samples: uint64(rng.IntN(3)), Period: uint64(rng.IntN(3))}
			switch rng.IntN(4) {
			case 0:
				m[k] = c
			case 1:
				acc[k] = c
			default:
				m[k] = c
				acc[k] = Counts{Samples: c.Samples + uint64(rng.IntN(2)), Period: c.Period + uint64(rng.IntN(2))}
			}
			if rng.IntN(50) == 0 {
				hidden[noLevel(k)] = true
			}
		}
		if i == 5 {
			// A DSO of the short name "[unknown]" shares those rows:
			// they stay tableRows.
			m[Key{DSO: "/x/" + symbols.Unknown, Sym: symbols.Unknown, Addr: 4}] = Counts{1, 1}
		}
		for _, procs := range []int{1, 2} {
			t.Run(fmt.Sprintf("case%d/procs%d", i, procs), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				kcs := keyCountsOf(acc)
				shards, noMap := groupTable(m, kcs, hidden, ranksFrom(ranks), 0, 1, false)
				if noMap != nil {
					t.Fatal("rows without a map kept apart unasked")
				}
				want := linesOf(mergeLines(tableOrder(slices.Concat(shards...)), nil))
				shards, noMap = groupTable(m, kcs, hidden, ranksFrom(ranks), 0, 1, true)
				lines := mergeLines(tableOrder(slices.Concat(shards...)), noMap)
				if i == 5 && lines.order != nil {
					t.Fatal("rows without a map kept apart though a DSO of their short name shares them")
				}
				if lines.order != nil {
					compacted++
				}
				got := linesOf(lines)
				if len(got) != len(want) {
					t.Fatalf("%d lines, want %d", len(got), len(want))
				}
				for j := range got {
					// The least keys may differ in Hyper, which
					// compareKeyCounts does not compare: either is
					// the least then, whichever the map gave first.
					g, w := got[j], want[j]
					g.first.k.Hyper, w.first.k.Hyper = false, false
					if g != w || compareKeyCounts(got[j].first, want[j].first) != 0 {
						t.Fatalf("line %d is %+v, want %+v", j, got[j], want[j])
					}
				}
			})
		}
	}
	if compacted < 40 {
		t.Errorf("%d tables kept rows apart, want 46", compacted)
	}
}
