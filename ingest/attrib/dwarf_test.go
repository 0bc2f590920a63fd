package attrib

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/ingest/unwind"
	"github.com/kmapindex/kmapindex/internal/testbuild"
)

// TestUserPayload round-trips a sample's user registers and stack
// through the spare capacity of its callchain slice.
func TestUserPayload(t *testing.T) {
	const mask = 1<<unwind.RegBP | 1<<unwind.RegSP | 1<<unwind.RegIP
	file := []byte("<header>0123456789abcdefghij<trailer>") // as a mapped recording
	stack := file[8:28]
	for _, tc := range []struct {
		name   string
		abi    uint64
		dyn    uint64
		chain  []uint64
		mapped []byte // the stack is in it: referenced, not copied
		want   bool
		inMap  bool
	}{
		{"kernel chain and stack", 2, 13, []uint64{contextKernel, 0xffffffff81000000}, nil, true, false},
		{"no kernel chain", 2, 20, nil, nil, true, false},
		{"dyn size past the copy", 2, 99, nil, nil, true, false},
		{"no registers (abi 0)", 0, 13, nil, nil, false, false},
		{"empty stack", 2, 0, nil, nil, false, false},
		{"mapped", 2, 13, []uint64{contextKernel, 0xffffffff81000000}, file, true, true},
		{"mapped, whole stack", 2, 20, nil, file, true, true},
		{"mapped, ending with the mapping", 2, 20, nil, file[:28], true, true},
		{"outside the mapping", 2, 13, nil, file[:20], true, false},
		{"outside another mapping", 2, 13, nil, []byte("elsewhere"), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &perfdata.Sample{Attr: &perfdata.Attr{SampleRegsUser: mask}, Callchain: tc.chain,
				RegsUserABI: tc.abi, RegsUser: []uint64{7, 0x7000, 0x401000}, StackUser: stack, StackUserDyn: tc.dyn}
			var slab addrSlab
			addrs := withUserPayload(&slab, rec, tc.mapped)
			if (addrs != nil) != tc.want {
				t.Fatalf("payload %v, want %v", addrs != nil, tc.want)
			}
			if !tc.want {
				return
			}
			if len(addrs) != len(tc.chain) {
				t.Fatalf("chain %v, want %v", addrs, tc.chain)
			}
			var s unwind.Sample
			if !userPayload(&event{addrs: addrs}, &s, tc.mapped) {
				t.Fatal("no payload decoded")
			}
			if sp, _ := s.Regs.Get(unwind.RegSP); sp != 0x7000 {
				t.Errorf("SP %#x", sp)
			}
			if ip, _ := s.Regs.Get(unwind.RegIP); ip != 0x401000 {
				t.Errorf("IP %#x", ip)
			}
			if want := stack[:min(tc.dyn, uint64(len(stack)))]; !bytes.Equal(s.Stack, want) {
				t.Errorf("stack %q, want %q", s.Stack, want)
			}
			if inMap := len(tc.mapped) > 0 && &s.Stack[0] == &stack[0]; inMap != tc.inMap {
				t.Errorf("stack referenced in the mapping: %v, want %v", inMap, tc.inMap)
			}
			if userPayload(&event{addrs: emptyChain}, &s, nil) {
				t.Error("a chain without payload decoded one")
			}
		})
	}
}

// TestChainReset finds the unknown context markers perf resets its
// callchain at, within the first maxStack frames only.
func TestChainReset(t *testing.T) {
	long := make([]uint64, maxStack+1)
	for _, tc := range []struct {
		name  string
		chain []uint64
		want  bool
	}{
		{"empty", nil, false},
		{"kernel", []uint64{contextKernel, 1, 2}, false},
		{"user marker", []uint64{contextKernel, 1, contextUser, 3}, false},
		{"guest marker", []uint64{contextKernel, 1, contextGuestKernel, 3}, true},
		{"marker past the depth limit", append(append([]uint64{}, long...), contextGuestKernel), false},
	} {
		if got := chainReset(tc.chain); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPayloadRecycling: a block's payloads and the arena's hold count
// references to it; when all are released the block is free again, and
// memory handed out unpooled is never looked up.
func TestPayloadRecycling(t *testing.T) {
	var ar payloadArena
	var events []*event
	for range 3 {
		b, tag := ar.take(10)
		b[0] = tag // as withUserPayload stores it, at the payload's start
		events = append(events, &event{addrs: b[:0]})
	}
	blk := ar.cur
	if blk == nil || !blk.pooled {
		t.Skip("the payload pool is taken by other tests")
	}
	if got := blk.refs.Load(); got != 4 {
		t.Fatalf("refs %d, want 3 payloads + the arena", got)
	}
	ar.seal()
	for _, e := range events {
		releasePayload(e)
	}
	if got := blk.refs.Load(); got != 0 {
		t.Errorf("refs %d after release, want 0", got)
	}
	big, tag := ar.take(payloadBlockWords + 1)
	if tag != unpooledTag || len(big) != payloadBlockWords+1 {
		t.Errorf("oversized payload: tag %#x, %d words", tag, len(big))
	}
}

// An inlined frame's table entry spans the symbol it is inlined into,
// as perf's inline symbols do: one function inlined into two others makes
// two entries (_sort__sym_cmp keeps apart inline symbols whose spans do
// not overlap), and two frames inside one symbol share theirs.
func TestInlinedKeySpan(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "two")
	src := testbuild.Source(t, dir, "two.c", "int one(int x) { return x * 3 + 1; }\nint two(int x) { return x * 5 + 2; }\nint main(void) { return one(1) + two(2); }\n")
	if err := testbuild.Compile(t, "gcc", "-O1", "-o", exe, src); err != nil {
		t.Fatal(err)
	}
	tab, err := symbols.ELF(exe)
	if err != nil {
		t.Fatal(err)
	}
	var s1, s2 symbols.Symbol
	for i := range tab.Len() {
		switch s := tab.Symbol(i); s.Name {
		case "one":
			s1 = s
		case "two":
			s2 = s
		}
	}
	if s1.End <= s1.Start+1 || s2.End <= s2.Start {
		t.Fatalf("symbols one %v, two %v", s1, s2)
	}
	a := &attributor{sym: newSymbolizer(nil, nil, nil, "", nil)}
	mp := index.Map{Start: 1 << 40, End: 1<<40 + s2.End + 0x1000, Mapping: index.MappingDSO, Kind: index.KindUser, DSO: exe}
	frame := func(off uint64) unwoundFrame {
		return unwoundFrame{ip: mp.Start + off, mp: mp, ok: true, inlined: "helper"}
	}
	k1, end1, base1 := a.inlinedKey(frame(s1.Start), 0)
	k1b, _, _ := a.inlinedKey(frame(s1.End-1), 0)
	k2, _, _ := a.inlinedKey(frame(s2.Start), 0)
	if k1.Sym != "helper (inlined)" || k1.DSO != exe || end1 != s1.End || base1 != s1.Name {
		t.Errorf("key %+v, end %#x, base %q", k1, end1, base1)
	}
	if k1 != k1b {
		t.Errorf("two frames in %s: %+v and %+v", s1.Name, k1, k1b)
	}
	if k1 == k2 {
		t.Errorf("frames in %s and %s share an entry: %+v", s1.Name, s2.Name, k1)
	}
}

// The register-state caches are per address space, as perf keeps one
// per process's maps: threads share one, a forked process has its own,
// and a COMM record that execs empties it for a thread already named
// (__thread__set_comm), not for one named by it.
func TestRegCachePerAddressSpace(t *testing.T) {
	a := &attributor{m: machine.New(mapset.BTree), dw: &dwarfState{}}
	as := func(pid, tid uint32) uint64 { return a.m.SampleThread(pid, tid).AddressSpace() }
	cache := func(pid, tid uint32) *unwind.RegCache { return a.dw.regCache(as(pid, tid)) }
	leader := cache(10, 10)
	if cache(10, 11) != leader || cache(10, 10) != leader {
		t.Fatal("threads of a process have different caches")
	}
	a.m.Fork(20, 10, 20, 10, 0)
	if cache(20, 20) == leader {
		t.Fatal("a forked process shares its parent's cache")
	}
	a.flushRegCache(10, 10) // unnamed: perf's comm__override, no flush
	if cache(10, 10) != leader {
		t.Fatal("an exec COMM of an unnamed thread flushed its cache")
	}
	a.m.Comm(10, 10, "sh")
	a.flushRegCache(10, 10) // named now: its process's cache goes
	if c := cache(10, 11); c == leader || c != cache(10, 10) {
		t.Fatal("an exec COMM of a named thread left its process's cache")
	}
}
