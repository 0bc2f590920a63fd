package symbols

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
)

// The direct flattening of non-overlapping symbols, and clusterBounds'
// search of the tree among overlapping ones only, answer exactly as the
// replayed tree walk at every point does (bounds, which a keep function
// forces), on every address where an answer can change.
func TestFlattenMatchesTreeWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 2000 {
		var b, c builder // table spends its builder: one for each table
		n := 1 + rng.IntN(40)
		for range n {
			start := rng.Uint64N(1 << 12)
			if iter%10 == 0 {
				start = ^uint64(0) - rng.Uint64N(1<<12) // near the top: ends may wrap
			}
			size := uint64(0)
			if rng.IntN(3) > 0 {
				size = rng.Uint64N(64)
			}
			e := entry{start: start, end: start + size, name: "s", binding: uint8(rng.IntN(3))}
			b.insert(e)
			c.insert(e)
		}
		for _, b := range []*builder{&b, &c} {
			b.fixupEnd(iter%2 == 0)
			b.fixupDuplicate()
		}
		fast := b.table(nil)
		slow := c.table(func(*entry) bool { return true })
		var probes []uint64
		for _, s := range slow.syms {
			probes = append(probes, s.start-1, s.start, s.start+1, s.end-1, s.end, s.end+1)
		}
		probes = append(probes, 0, ^uint64(0))
		for _, p := range probes {
			f, fok := fast.Find(p)
			s, sok := slow.Find(p)
			if f != s || fok != sok {
				t.Fatalf("iter %d Find(%#x): flattened %v %v, tree walk %v %v\nsyms %v", iter, p, f, fok, s, sok, slow.Symbols())
			}
		}
		if !slices.Equal(fast.Symbols(), slow.Symbols()) {
			t.Fatalf("iter %d: symbols differ", iter)
		}
	}
}

// kernelSorted (no tree) gives the same tables as kernelTree whenever it
// applies, on random kallsyms with duplicates, modules, [bpf] tags, the
// entry trampoline and weak and local symbols, in address order or not.
func TestKernelSortedMatchesTree(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	types := []byte("TtWwDdBbRrA")
	mods := []index.Map{{Start: 0x10000, End: 0x20000, DSO: "[m1]"}, {Start: 0x30000, End: 0x40000, DSO: "[m2]"}}
	applied := 0
	for range 500 {
		var syms []kallsyms.Symbol
		for range 1 + rng.IntN(80) {
			s := kallsyms.Symbol{Addr: uint64(rng.IntN(64)) * 0x800, Type: types[rng.IntN(len(types))], Name: fmt.Sprintf("%sf%d", strings.Repeat("_", rng.IntN(3)), rng.IntN(20))}
			switch rng.IntN(8) {
			case 0:
				s.Module = "m1"
			case 1:
				s.Module = "bpf"
			case 2:
				s.Name = entryTrampolineName
			}
			syms = append(syms, s)
		}
		if rng.IntN(2) == 0 { // in address order, as a kallsyms without modules
			slices.SortStableFunc(syms, func(a, b kallsyms.Symbol) int { return cmp.Compare(a.Addr, b.Addr) })
		}
		l := kallsyms.NewList(syms)
		want := kernelTree(l, mods, KernelOptions{})
		got, ok := kernelSorted(l, mods, KernelOptions{})
		if !ok {
			continue
		}
		applied++
		if !slices.Equal(got.Kernel.Symbols(), want.Kernel.Symbols()) || got.Start != want.Start || got.End != want.End {
			t.Fatalf("kernel tables differ:\nsorted %v\ntree   %v", got.Kernel.Symbols(), want.Kernel.Symbols())
		}
		for a := uint64(0); a < 64*0x800+0x2000; a += 0x100 {
			if g, w := got.Kernel.Name(a), want.Kernel.Name(a); g != w {
				t.Fatalf("Name(%#x) = %s, tree %s", a, g, w)
			}
		}
		if len(got.Modules) != len(want.Modules) {
			t.Fatalf("modules %d vs %d", len(got.Modules), len(want.Modules))
		}
		for name, w := range want.Modules {
			if !slices.Equal(got.Modules[name].Symbols(), w.Symbols()) {
				t.Fatalf("module %s differs", name)
			}
		}
	}
	if applied < 100 {
		t.Errorf("the sorted path applied to only %d of 500 cases", applied)
	}
}

// kallsyms data symbols (D, B) are objects, as kallsyms2elf_type makes
// them; text and weak ones (T, W) functions. Module symbols keep theirs
// through the split.
func TestKernelObjects(t *testing.T) {
	syms := []kallsyms.Symbol{
		{Addr: 0x1000, Type: 'T', Name: "_text"},
		{Addr: 0x1100, Type: 't', Name: "local_fn"},
		{Addr: 0x1200, Type: 'W', Name: "weak_fn"},
		{Addr: 0x2000, Type: 'D', Name: "data"},
		{Addr: 0x2100, Type: 'd', Name: "local_data"},
		{Addr: 0x3000, Type: 'B', Name: "bss"},
		{Addr: 0x3100, Type: 'b', Name: "local_bss"},
		{Addr: 0x10100, Type: 't', Name: "mod_fn", Module: "m1"},
		{Addr: 0x10200, Type: 'd', Name: "mod_data", Module: "m1"},
	}
	want := map[string]bool{"_text": false, "local_fn": false, "weak_fn": false, "data": true, "local_data": true,
		"bss": true, "local_bss": true, "mod_fn": false, "mod_data": true}
	mods := []index.Map{{Start: 0x10000, End: 0x20000, DSO: "[m1]"}}
	for name, kt := range map[string]*KernelTables{
		"sorted": Kernel(syms, mods),
		"tree":   kernelTree(kallsyms.NewList(syms), mods, KernelOptions{}),
	} {
		got := map[string]bool{}
		for _, tab := range []*Table{kt.Kernel, kt.Module("[m1]")} {
			for i, s := range tab.Symbols() {
				got[s.Name] = s.Object
				if tab.IsObject(i) != s.Object {
					t.Errorf("%s: IsObject(%d) disagrees with %v", name, i, s)
				}
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: objects %v, want %v", name, got, want)
		}
	}
}

// kcoreSorted (no tree) gives the same table as kcoreTree whenever it
// applies, on random kallsyms over random kcore maps whose file offsets
// follow their addresses or not, with symbols outside every map, in BPF
// maps and at map ends.
func TestKcoreSortedMatchesTree(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	types := []byte("TtWwDdBbR")
	applied, unsorted := 0, 0
	for range 500 {
		var maps []index.Map
		for i := range 1 + rng.IntN(4) {
			start := uint64(i)*0x20000 + uint64(rng.IntN(4))*0x1000
			kind := index.KindKcore
			switch rng.IntN(5) {
			case 0:
				kind = index.KindKernel
			case 1:
				kind = index.KindBPFProg
			}
			maps = append(maps, index.Map{Start: start, End: start + 0x8000 + uint64(rng.IntN(8))*0x1000, Pgoff: uint64(rng.IntN(8)) * 0x10000, Kind: kind})
		}
		find := func(a uint64) (index.Map, bool) {
			for _, m := range maps {
				if m.Contains(a) {
					return m, true
				}
			}
			return index.Map{}, false
		}
		var syms []kallsyms.Symbol
		for range 1 + rng.IntN(80) {
			s := kallsyms.Symbol{Addr: uint64(rng.IntN(160)) * 0x400, Type: types[rng.IntN(len(types))], Name: fmt.Sprintf("f%d", rng.IntN(30))}
			if rng.IntN(6) == 0 {
				s.Module = "m1"
			}
			syms = append(syms, s)
		}
		if rng.IntN(2) == 0 {
			slices.SortStableFunc(syms, func(a, b kallsyms.Symbol) int { return cmp.Compare(a.Addr, b.Addr) })
		}
		l := kallsyms.NewList(syms)
		idx := keptOrder(l)
		want := kcoreTree(l, idx, find)
		got, ok := kcoreSorted(l, idx, find)
		if !ok {
			continue
		}
		applied++
		if !slices.IsSortedFunc(want.Symbols(), func(a, b Symbol) int { return cmp.Compare(a.Start, b.Start) }) {
			t.Fatal("the tree's symbols are not in order")
		}
		if !slices.Equal(got.Symbols(), want.Symbols()) {
			t.Fatalf("tables differ:\nsorted %v\ntree   %v", got.Symbols(), want.Symbols())
		}
		for _, s := range want.Symbols() {
			for _, a := range []uint64{s.Start - 1, s.Start, s.Start + 1, s.End - 1, s.End} {
				g, gok := got.Find(a)
				w, wok := want.Find(a)
				if g != w || gok != wok {
					t.Fatalf("Find(%#x) = %v %v, tree %v %v", a, g, gok, w, wok)
				}
			}
		}
		for _, m := range maps {
			if m.Pgoff < maps[0].Pgoff {
				unsorted++
				break
			}
		}
	}
	if applied < 100 || unsorted < 20 {
		t.Errorf("the sorted path applied to %d of 500 cases, %d of them with maps out of offset order", applied, unsorted)
	}
}

// insertAll answers every lookup as inserting the symbols one by one in
// their order does, with and without the fix-ups after it, whether it
// sorted them or not.
func TestInsertAllMatchesInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	sortedIn := 0
	for iter := range 4000 {
		fixedUp := iter%2 == 0
		var es []entry
		for range 1 + rng.IntN(30) {
			start := uint64(rng.IntN(400)) * 4
			size := uint64(0)
			if rng.IntN(3) > 0 {
				size = uint64(rng.IntN(16)) * 4
			}
			if iter%3 == 0 && rng.IntN(2) == 0 && len(es) > 0 { // apart more often: sizes up to the next start
				size = 0
			}
			es = append(es, entry{start: start, end: start + size, name: fmt.Sprintf("%sf%d", strings.Repeat("_", rng.IntN(2)), rng.IntN(50)), binding: uint8(rng.IntN(3))})
		}
		var a, b builder
		if a.insertAll(es, fixedUp) {
			sortedIn++
		}
		for _, e := range es {
			b.insert(e)
		}
		if fixedUp {
			a.fixupEnd(false)
			a.fixupDuplicate()
			b.fixupEnd(false)
			b.fixupDuplicate()
		}
		ta, tb := a.table(nil), b.table(nil)
		if !slices.Equal(ta.Symbols(), tb.Symbols()) {
			t.Fatalf("iter %d: symbols differ:\ninsertAll %v\nin order  %v", iter, ta.Symbols(), tb.Symbols())
		}
		for _, s := range tb.Symbols() {
			for _, p := range []uint64{s.Start - 1, s.Start, s.Start + 1, s.End - 1, s.End, s.End + 1} {
				x, xok := ta.Find(p)
				y, yok := tb.Find(p)
				if x != y || xok != yok {
					t.Fatalf("iter %d Find(%#x): insertAll %v %v, in order %v %v", iter, p, x, xok, y, yok)
				}
			}
		}
	}
	if sortedIn < 400 || sortedIn > 3600 {
		t.Errorf("sorted %d of 4000 times: the test exercises one path only", sortedIn)
	}
}
