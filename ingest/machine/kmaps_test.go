package machine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
)

// overlapsByScan is perfKmaps.overlaps the way it was first written,
// the reference: does mp overlap any live map but node skip?
func overlapsByScan(k *perfKmaps, mp index.Map, skip int32) bool {
	for i := range k.nodes {
		if k.nodes[i] != nil && int32(i) != skip && mp.Overlaps(k.maps[i]) {
			return true
		}
	}
	return false
}

// hasNameByScan is perfKmaps.hasName by a scan of the live maps.
func hasNameByScan(k *perfKmaps, dso string) bool {
	for v, n := range k.nodes {
		if n != nil && k.maps[v].DSO == dso {
			return true
		}
	}
	return false
}

// perfKmaps tells an overlap at the same insertion as the scan of every
// live map did, over random insertions (empty maps, shared starts,
// touching ends), erasures, kernel maps set, moved and fixed up in
// place, and KSYMBOL records, in a small address space; and from a
// random step on, whether a map of a name is there (hasName) and which
// map a pgoff change by value changes (setPgoff), as scans tell them.
func TestPerfKmapsOverlapAgainstScan(t *testing.T) {
	names := []string{"[a]", "[b]", "[c]", "m"}
	checked := 0 // insertions before the first overlap
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 9))
		k := newPerfKmaps()
		live := func() []int32 {
			var vs []int32
			for v, n := range k.nodes {
				if n != nil {
					vs = append(vs, int32(v))
				}
			}
			return vs
		}
		// Many small maps and empty ones in a space they fill slowly,
		// with now and then a large one: most steps come before the
		// first overlap, and empty maps lie below and at new starts.
		space := 64 << rng.IntN(4)
		randMap := func() index.Map {
			start := uint64(rng.IntN(space)) * 4
			if vs := live(); len(vs) > 0 && rng.IntN(3) == 0 {
				// At a live map's start or end, or just inside it.
				o := k.maps[vs[rng.IntN(len(vs))]]
				start = []uint64{o.Start, o.End, o.Start + 4}[rng.IntN(3)]
			}
			size := uint64(rng.IntN(3)) * 4 // 0: empty
			if rng.IntN(16) == 0 {
				size = uint64(rng.IntN(40)) * 4
			}
			kind := index.KindModule
			if rng.IntN(2) == 0 {
				kind = index.KindBPFProg
			}
			return index.Map{Start: start, End: start + size, Kind: kind, DSO: names[rng.IntN(len(names))]}
		}
		askFrom := rng.IntN(300) // hasName and setPgoff are asked from then on
		for step := range 300 {
			want := k.overlap
			if !want {
				checked++
			}
			var op string
			switch r := rng.IntN(20); {
			case r < 9:
				op = "insert"
				mp := randMap()
				want = want || overlapsByScan(k, mp, -1)
				k.insert(mp)
			case r < 13:
				op = "remove"
				if vs := live(); len(vs) > 0 {
					k.remove(vs[rng.IntN(len(vs))])
				}
			case r < 15:
				op = "setKernel"
				mp := randMap()
				if rng.IntN(4) == 0 {
					mp.End = 0 // to the end of the address space
				}
				full := mp
				if full.End == 0 {
					full.End = ^uint64(0)
				}
				// The old kernel map goes first; the empty map at 0
				// setKernel inserts and erases overlaps nothing.
				want = want || overlapsByScan(k, full, k.kernel)
				k.setKernel(mp)
			case r < 16:
				op = "moveKernel"
				mp := randMap()
				if k.kernel >= 0 {
					want = want || overlapsByScan(k, mp, k.kernel)
				}
				k.moveKernel(mp)
			case r < 17 && step >= askFrom:
				op = "setPgoff"
				mp := randMap()
				if vs := live(); len(vs) > 0 && rng.IntN(4) != 0 {
					mp = k.maps[vs[rng.IntN(len(vs))]]
				}
				want := slices.Clone(k.maps)
				for v := range k.nodes {
					if k.nodes[v] != nil && k.maps[v] == mp {
						want[v].Pgoff = uint64(step)
						break
					}
				}
				k.setPgoff(-1, mp, uint64(step))
				if !slices.Equal(k.maps, want) {
					t.Fatalf("seed %d step %d: setPgoff(%v) left %v, the scan says %v", seed, step, mp, k.maps, want)
				}
			case r < 18:
				op = "fixupKernel"
				mp := randMap()
				k.fixupKernel(mp.Start, mp.End)
			default:
				op = "ksymbol"
				mp := randMap()
				s := Ksymbol{Addr: mp.Start, Len: uint32(mp.End - mp.Start), Name: "bpf_prog_x", Unregister: rng.IntN(3) == 0}
				if !s.Unregister && k.find(s.Addr) < 0 {
					want = want || overlapsByScan(k, ksymbolMap(s), -1)
				}
				k.ksymbol(s)
			}
			if k.overlap != want {
				t.Fatalf("seed %d step %d (%s): overlap %v, the scan says %v", seed, step, op, k.overlap, want)
			}
			if step >= askFrom {
				for _, name := range names {
					if got, want := k.hasName(name), hasNameByScan(k, name); got != want {
						t.Fatalf("seed %d step %d (%s): hasName(%s) %v, the scan says %v", seed, step, op, name, got, want)
					}
				}
			}
		}
	}
	t.Logf("%d steps before an overlap", checked)
}

// BenchmarkModuleLoadsAmongBPF loads 300 modules from their files, 4
// sections each, on a host with 20,000 BPF programs: perf's
// maps__find_by_name for each section (hasKernelMapNamed) and the
// module map's new pgoff (setPgoff) must not walk every kernel map.
func BenchmarkModuleLoadsAmongBPF(b *testing.B) {
	const modules, programs = 300, 20000
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		m := New(mapset.BTree)
		m.OnModuleLoad = func(m *Machine, mod index.Map) {
			var secs []index.Map
			for i, name := range []string{".init.text", ".exit.text", ".text.unlikely", ".noinstr.text"} {
				start := mod.End + uint64(i)*0x100
				secs = append(secs, index.Map{Start: start, End: start + 0x80, Kind: index.KindKernelSection, DSO: mod.DSO + name})
			}
			if err := m.LoadModule(mod, 0x40, true, secs); err != nil {
				b.Fatal(err)
			}
		}
		if err := m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000, Filename: "[kernel.kallsyms]_text"}); err != nil {
			b.Fatal(err)
		}
		for i := range programs {
			if err := m.Ksymbol(Ksymbol{Addr: 0xffffffffa0000000 + uint64(i)*0x1000, Len: 0x800, Type: 1, Name: fmt.Sprintf("bpf_prog_%016x_p", i)}); err != nil {
				b.Fatal(err)
			}
		}
		for i := range modules {
			name := fmt.Sprintf("/lib/modules/6.1/mod%d.ko", i)
			if err := m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffffc0000000 + uint64(i)*0x10000, Len: 0x8000, Filename: name}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		for i := range modules {
			if _, ok := m.Resolve(CPUModeKernel, 0, 0, 0xffffffffc0000010+uint64(i)*0x10000); !ok {
				b.Fatalf("module %d not found", i)
			}
		}
	}
}
