package index_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/listref"
)

// m is a DSO-mapped map for the vectors.
func m(start, end, pgoff uint64, dso string) index.Map {
	return index.Map{Start: start, End: end, Pgoff: pgoff, Kind: index.KindUser, DSO: dso}
}

type op struct {
	kind string // "fixup", "merge", "insert"
	m    index.Map
}

// Vectors F1–F6, M1–M3 of perf-maps-semantics.md §1.14, mainline results.
func TestVectorsOps(t *testing.T) {
	const (
		T = 0xffffffffc0147640
		P = 0xffffffffc0147a2c
	)
	tramp := index.Map{Start: T, End: 0xffffffffc0148640, Kind: index.KindBPFImage, DSO: "bpf_trampoline_6442522522"}
	prog := index.Map{Start: P, End: P + 306, Kind: index.KindBPFProg, DSO: "bpf_prog_40ddf486530245f5_sd_devices"}
	cut := func(x index.Map, start, end, pgoff uint64) index.Map {
		x.Start, x.End, x.Pgoff = start, end, pgoff
		return x
	}
	old := m(0x1000, 0x9000, 0x100, "old")
	a, b, c := m(0x1000, 0x2000, 0, "a"), m(0x2000, 0x3000, 0, "b"), m(0x3000, 0x4000, 0, "c")
	tests := []struct {
		name string
		ops  []op
		want []index.Map
	}{
		{"F1 split", []op{{"insert", old}, {"fixup", m(0x3000, 0x5000, 0, "new")}},
			[]index.Map{m(0x1000, 0x3000, 0x100, "old"), m(0x3000, 0x5000, 0, "new"), m(0x5000, 0x9000, 0x4100, "old")}},
		{"F2 same start", []op{{"insert", old}, {"fixup", m(0x1000, 0x5000, 0, "new")}},
			[]index.Map{m(0x1000, 0x5000, 0, "new"), m(0x5000, 0x9000, 0x4100, "old")}},
		{"F3 same end", []op{{"insert", old}, {"fixup", m(0x5000, 0x9000, 0, "new")}},
			[]index.Map{m(0x1000, 0x5000, 0x100, "old"), m(0x5000, 0x9000, 0, "new")}},
		{"F4 spanning three", []op{{"insert", a}, {"insert", b}, {"insert", c}, {"fixup", m(0x1800, 0x3800, 0, "new")}},
			[]index.Map{m(0x1000, 0x1800, 0, "a"), m(0x1800, 0x3800, 0, "new"), m(0x3800, 0x4000, 0x800, "c")}},
		{"F5 adjacency", []op{{"insert", m(0x2000, 0x3000, 0, "a")}, {"fixup", m(0x3000, 0x4000, 0, "new")}},
			[]index.Map{m(0x2000, 0x3000, 0, "a"), m(0x3000, 0x4000, 0, "new")}},
		{"F6 P then T", []op{{"fixup", prog}, {"fixup", tramp}}, []index.Map{tramp}},
		{"F6 T then P", []op{{"fixup", tramp}, {"fixup", prog}},
			[]index.Map{cut(tramp, T, P, 0), prog, cut(tramp, P+306, 0xffffffffc0148640, 0x51e)}},
		{"M1 merge, no empty piece", []op{{"insert", m(0x3000, 0x5000, 0, "old")}, {"merge", m(0x1000, 0x5000, 0x100, "new")}},
			[]index.Map{m(0x1000, 0x3000, 0x100, "new"), m(0x3000, 0x5000, 0, "old")}},
		{"M2 merge around two", []op{{"insert", m(0x2000, 0x3000, 0, "A")}, {"insert", m(0x5000, 0x6000, 0, "B")}, {"merge", m(0x1000, 0x8000, 0x10000, "K")}},
			[]index.Map{m(0x1000, 0x2000, 0x10000, "K"), m(0x2000, 0x3000, 0, "A"), m(0x3000, 0x5000, 0x12000, "K"), m(0x5000, 0x6000, 0, "B"), m(0x6000, 0x8000, 0x15000, "K")}},
		{"M3 merge of a subset", []op{{"insert", m(0x1000, 0x9000, 0, "BIG")}, {"merge", m(0x2000, 0x3000, 0, "new")}},
			[]index.Map{m(0x1000, 0x9000, 0, "BIG")}},
	}
	for _, tc := range tests {
		for _, im := range impls {
			t.Run(tc.name+"/impl="+im.name, func(t *testing.T) {
				ms := im.new()
				for _, o := range tc.ops {
					var err error
					switch o.kind {
					case "insert":
						err = ms.Insert(o.m)
					case "fixup":
						err = ms.FixupOverlapAndInsert(o.m)
					case "merge":
						err = ms.MergeIn(o.m)
					}
					if err != nil {
						t.Fatalf("%s %s: %v", o.kind, o.m, err)
					}
				}
				if got := ms.Slice(); !slices.Equal(got, tc.want) {
					t.Errorf("got\n%swant\n%s", index.Canonical(got), index.Canonical(tc.want))
				}
			})
		}
	}
}

// F7: perf stores overlapping maps and its bsearch then misses 0x6000
// although A covers it. We never store overlaps: the plain insert is
// refused, and the fixup insert answers every covered address.
func TestVectorF7(t *testing.T) {
	A, B, C := m(0x1000, 0x9000, 0, "A"), m(0x2000, 0x3000, 0, "B"), m(0x4000, 0x5000, 0, "C")
	for _, im := range impls {
		t.Run("impl="+im.name, func(t *testing.T) {
			ms := im.new()
			if err := ms.Insert(A); err != nil {
				t.Fatal(err)
			}
			if err := ms.Insert(B); !errors.Is(err, index.ErrOverlap) {
				t.Fatalf("overlapping Insert: err = %v, want ErrOverlap", err)
			}
			for _, x := range []index.Map{B, C} {
				if err := ms.FixupOverlapAndInsert(x); err != nil {
					t.Fatal(err)
				}
			}
			for _, tc := range []struct {
				ip  uint64
				dso string
			}{{0x1500, "A"}, {0x2500, "B"}, {0x4500, "C"}, {0x6000, "A"}} {
				got, ok := ms.Find(tc.ip)
				if !ok || got.DSO != tc.dso {
					t.Errorf("Find(%#x) = %v %v, want %s", tc.ip, got, ok, tc.dso)
				}
			}
		})
	}
}

// F8: lookup boundaries of the x86_64 kernel map.
func TestVectorF8(t *testing.T) {
	k := index.Map{Start: 0xffffffff81000000, End: 0xffffffff82209988, Mapping: index.MappingIdentity, Kind: index.KindKernel, DSO: index.KernelDSO}
	for _, im := range impls {
		ms := im.new()
		if err := ms.Insert(k); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			ip  uint64
			hit bool
		}{{0xffffffff81000000, true}, {0xffffffff82209987, true}, {0xffffffff82209988, false}, {0xffffffff80ffffff, false}, {0, false}, {^uint64(0), false}} {
			if _, ok := ms.Find(tc.ip); ok != tc.hit {
				t.Errorf("impl=%s Find(%#x) hit = %v, want %v", im.name, tc.ip, ok, tc.hit)
			}
		}
		if err := ms.Insert(index.Map{Start: 5, End: 5}); err == nil {
			t.Errorf("impl=%s: an empty map was stored", im.name)
		}
		if err := ms.FixupOverlapAndInsert(index.Map{Start: 9, End: 5}); err == nil {
			t.Errorf("impl=%s: end < start was stored", im.name)
		}
	}
}

// E1: mainline fixup_end clips overlapping module ends.
func TestVectorE1(t *testing.T) {
	in := []index.Map{
		{Start: 0xffffffff81000000, DSO: "kernel"},
		{Start: 0xffffffffc0a00000, End: 0xffffffffc0a4d000, DSO: "nf_tables"},
		{Start: 0xffffffffc0a3e000, End: 0xffffffffc0a40000, DSO: "nfnetlink"},
		{Start: 0xffffffffc0b00000, DSO: "last"},
	}
	want := []uint64{0xffffffffc0a00000, 0xffffffffc0a3e000, 0xffffffffc0a40000, ^uint64(0)}
	for name, fix := range map[string]func([]index.Map) []index.Map{"btree": index.FixupEnd, "list": listref.FixupEnd} {
		got := fix(slices.Clone(in))
		for i, w := range want {
			if got[i].End != w {
				t.Errorf("impl=%s %s end = %#x, want %#x", name, got[i].DSO, got[i].End, w)
			}
		}
	}
}

// K7: a /proc/modules module becomes [start, start+size); a module that
// starts inside it clips it (E1) when the kernel maps are built.
func TestVectorK7(t *testing.T) {
	lm := index.Landmarks{Text: index.Landmark{Addr: 0xffffffff81000000, OK: true}, Etext: index.Landmark{Addr: 0xffffffff82209988, OK: true}}
	mods := []index.Module{{Name: "nf_tables", Start: 0xffffffffc0a00000, Size: 315392}}
	want := "ffffffff81000000-ffffffff82209988 0 identity kernel [kernel.kallsyms]\n" +
		"ffffffffc0a00000-ffffffffc0a4d000 0 dso module [nf_tables]\n"
	clipped := "ffffffff81000000-ffffffff82209988 0 identity kernel [kernel.kallsyms]\n" +
		"ffffffffc0a00000-ffffffffc0a3e000 0 dso module [nf_tables]\n" +
		"ffffffffc0a3e000-ffffffffc0a40000 0 dso module [nfnetlink]\n"
	more := append(slices.Clone(mods), index.Module{Name: "nfnetlink", Start: 0xffffffffc0a3e000, Size: 0x2000})
	bt, err := index.KernelMaps(lm, mods)
	if err != nil {
		t.Fatal(err)
	}
	lr, err := listref.KernelMaps(lm, mods)
	if err != nil {
		t.Fatal(err)
	}
	if bt.Canonical() != want || lr.Canonical() != want {
		t.Errorf("btree\n%slist\n%swant\n%s", bt.Canonical(), lr.Canonical(), want)
	}
	bt, _ = index.KernelMaps(lm, more)
	lr, _ = listref.KernelMaps(lm, more)
	if bt.Canonical() != clipped || lr.Canonical() != clipped {
		t.Errorf("btree\n%slist\n%swant\n%s", bt.Canonical(), lr.Canonical(), clipped)
	}
	if _, err := index.KernelMaps(lm, []index.Module{{Name: "x", Start: 0, Size: 10}}); err == nil {
		t.Error("restricted module address accepted")
	}
	if _, err := index.KernelMaps(index.Landmarks{}, nil); err == nil {
		t.Error("missing _text accepted")
	}
}

// K8: a KSYMBOL in an empty region gets its own map; a second one inside
// that map gets none (perf attaches its symbol to the existing map).
func TestVectorK8(t *testing.T) {
	bpf := index.Map{Start: 0xffffffffc0186388, End: 0xffffffffc0186388 + 0x12a, Kind: index.KindBPFProg, DSO: "bpf_prog_be31ae23198a0378_sd_devices"}
	for _, im := range impls {
		ms := im.new()
		if _, ok := ms.Find(bpf.Start); ok {
			t.Fatal("empty maps found something")
		}
		if err := ms.FixupOverlapAndInsert(bpf); err != nil {
			t.Fatal(err)
		}
		got, ok := ms.Find(0xffffffffc01863a0)
		if !ok || got != bpf || got.End != 0xffffffffc01864b2 {
			t.Errorf("impl=%s second KSYMBOL found %v %v, want the first program's map", im.name, got, ok)
		}
		if got.MapIP(got.Start) != 0 {
			t.Errorf("symbol offset %#x, want 0", got.MapIP(got.Start))
		}
	}
}

// TestFindAndRemoveAtEdges looks up and removes at the ends of maps that
// touch address 0 and the top of the address space, on both
// implementations: a search key must fall on the right side of each end.
func TestFindAndRemoveAtEdges(t *testing.T) {
	const top = ^uint64(0)
	low, mid, high := m(0, 0x1000, 0, "low"), m(0x2000, 0x3000, 0, "mid"), m(top-0x1000, top, 0, "high")
	finds := []struct {
		a    uint64
		want string // DSO, "" for none
	}{
		{0, "low"}, {0xfff, "low"}, {0x1000, ""}, {0x1fff, ""}, {0x2000, "mid"}, {0x2fff, "mid"},
		{0x3000, ""}, {top - 0x1001, ""}, {top - 0x1000, "high"}, {top - 1, "high"}, {top, ""},
	}
	removes := []struct {
		m    index.Map
		want bool
	}{
		{m(0x2000, 0x2fff, 0, "mid"), false}, {m(0x2001, 0x3000, 0, "mid"), false},
		{m(0x1000, 0x2000, 0, "gap"), false}, {m(0, 0, 0, "empty"), false},
		{m(top-0x1000, top, 0, "high"), true}, {m(0x2000, 0x3000, 0, "mid"), true},
		{m(0, 0x1000, 0, "low"), true}, {m(0, 0x1000, 0, "low"), false},
	}
	for _, ic := range impls {
		t.Run(ic.name, func(t *testing.T) {
			ms := ic.new()
			for _, x := range []index.Map{high, low, mid} {
				if err := ms.Insert(x); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range finds {
				got, ok := ms.Find(f.a)
				if ok != (f.want != "") || got.DSO != f.want {
					t.Errorf("Find(%#x) = %v %v, want %q", f.a, got, ok, f.want)
				}
			}
			for i, r := range removes {
				if got := ms.Remove(r.m); got != r.want {
					t.Errorf("remove %d %v = %v, want %v", i, r.m, got, r.want)
				}
			}
			if ms.Len() != 0 {
				t.Errorf("%d maps left: %v", ms.Len(), ms.Slice())
			}
		})
	}
}
