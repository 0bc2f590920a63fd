package resolver

import (
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// probe is one question readers ask: (pid, tid, address) in user mode.
type probe struct {
	pid, tid uint32
	addr     uint64
}

type answer struct {
	m  index.Map
	ok bool
}

// churn applies one random change: an mmap, a fork, an exit or a new
// comm, among few processes so that they collide.
func churn(rng *rand.Rand, r *Resolver) {
	pid := uint32(rng.IntN(8) + 1)
	tid := pid
	if rng.IntN(3) == 0 {
		tid = pid*100 + uint32(rng.IntN(4))
	}
	switch rng.IntN(8) {
	case 0:
		r.Fork(uint32(rng.IntN(8)+1), pid, uint32(rng.IntN(8)+1), tid, 0)
	case 1:
		r.Exit(pid, tid)
	case 2:
		r.Comm(pid, tid, "c")
	default:
		r.Mmap(Mmap{CPUMode: CPUModeUser, Pid: pid, Tid: tid, Addr: uint64(rng.IntN(256)) << 12,
			Len: uint64(rng.IntN(16)+1) << 12, Pgoff: uint64(rng.IntN(8)) << 12, Filename: "/nonexistent/lib.so", Prot: 4})
	}
}

// TestConcurrentReaders runs readers against a writer that churns maps
// and publishes a version after every few changes. Each reader checks
// every answer of the version it holds against what a list-reference
// resolver, fed the same changes, answered for that version (a full
// copy, not a copy-on-write clone). Run under -race, it also shows that
// readers never touch what the writer changes.
func TestConcurrentReaders(t *testing.T) {
	r := New(Options{NoFiles: true})
	ref := New(Options{Impl: mapset.List, NoFiles: true})
	var probes []probe
	for pid := uint32(1); pid <= 8; pid++ {
		for _, tid := range []uint32{pid, pid*100 + 1, 99999} {
			for a := uint64(0); a < 272<<12; a += 0x1800 {
				probes = append(probes, probe{pid, tid, a})
			}
		}
	}
	var want sync.Map // *View → []answer
	record := func(v, rv *View) {
		ans := make([]answer, len(probes))
		for i, p := range probes {
			ans[i].m, ans[i].ok = rv.Find(CPUModeUser, p.pid, p.tid, p.addr)
		}
		want.Store(v, ans)
	}
	record(r.View(), ref.View())

	var done atomic.Bool
	var checked, versions atomic.Int64
	var wg sync.WaitGroup
	for w := range max(2, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			seen := map[*View]bool{}
			for !done.Load() || len(seen) < 2 {
				v := r.View()
				ans, ok := want.Load(v)
				for !ok { // published, its answers not stored yet
					runtime.Gosched()
					ans, ok = want.Load(v)
				}
				seen[v] = true
				for range 64 {
					i := rng.IntN(len(probes))
					p := probes[i]
					got, gok := v.Find(CPUModeUser, p.pid, p.tid, p.addr)
					if w := ans.([]answer)[i]; got != w.m || gok != w.ok {
						t.Errorf("version %d, pid %d tid %d addr %#x: %v %v, want %v %v", v.Version(), p.pid, p.tid, p.addr, got, gok, w.m, w.ok)
						done.Store(true)
						return
					}
					checked.Add(1)
				}
				if done.Load() {
					return
				}
			}
		})
	}
	rng := rand.New(rand.NewPCG(42, 42))
	for range 400 {
		for range rng.IntN(8) + 1 {
			seed := rng.Uint64()
			churn(rand.New(rand.NewPCG(seed, 0)), r)
			churn(rand.New(rand.NewPCG(seed, 0)), ref)
		}
		// Publish after computing the answers, so readers find them.
		rv := ref.Publish()
		v := r.newView()
		record(v, rv)
		r.cur.Store(v)
		versions.Add(1)
	}
	done.Store(true)
	wg.Wait()
	if checked.Load() == 0 {
		t.Fatal("no answer checked")
	}
	t.Logf("%d versions, %d answers checked", versions.Load(), checked.Load())
}

// TestResolveSymbols resolves kernel, module and BPF addresses to their
// symbols, and a user address in a file that cannot be read to none.
func TestResolveSymbols(t *testing.T) {
	r := New(Options{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000, Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text"}))
	must(r.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffffc0000000, Len: 0x3000, Filename: "/lib/modules/6.1/kernel/fs/ext4-x.ko"}))
	r.LoadKallsyms([]kallsyms.Symbol{
		{Addr: 0xffffffff81000000, Type: 'T', Name: "_text"},
		{Addr: 0xffffffff81000100, Type: 'T', Name: "do_syscall_64"},
		{Addr: 0xffffffff81000400, Type: 'T', Name: "_etext"},
		{Addr: 0xffffffffc0000010, Type: 't', Name: "ext4_fill_super", Module: "ext4_x"},
	})
	must(r.Ksymbol(Ksymbol{Addr: 0xffffffffc1000000, Len: 0x100, Type: 1, Name: "bpf_prog_1234_handler"}))
	must(r.Mmap(Mmap{CPUMode: CPUModeUser, Pid: 7, Tid: 7, Addr: 0x400000, Len: 0x1000, Pgoff: 0x2000, Filename: "/nonexistent/a.out", Prot: 4}))
	v := r.Publish()
	tests := []struct {
		cpumode  uint8
		pid, tid uint32
		addr     uint64
		dso, sym string
		offset   uint64
	}{
		{CPUModeKernel, 0, 0, 0xffffffff81000123, "[kernel.kallsyms]", "do_syscall_64", 0xffffffff81000123},
		{CPUModeKernel, 0, 0, 0xffffffffc0000020, "[ext4_x]", "ext4_fill_super", 0x20},
		{CPUModeKernel, 0, 0, 0xffffffffc1000010, "bpf_prog_1234_handler", "bpf_prog_1234_handler", 0x10},
		{CPUModeUser, 7, 8, 0x400010, "/nonexistent/a.out", "", 0x2010}, // thread 8 unknown: pid 7's maps
	}
	for _, tt := range tests {
		loc := v.Resolve(tt.cpumode, tt.pid, tt.tid, tt.addr)
		if !loc.Found || loc.Map.DSO != tt.dso || loc.Symbol.Name != tt.sym || loc.Offset != tt.offset {
			t.Errorf("%#x: %+v, want %s %s %#x", tt.addr, loc, tt.dso, tt.sym, tt.offset)
		}
	}
	if loc := v.Resolve(CPUModeUser, 9, 9, 0x400010); loc.Found {
		t.Errorf("unknown process resolved: %+v", loc)
	}
}

// TestApplyRecording replays a real system-wide recording (file order)
// through Apply, publishing a version before every sample, and checks
// each sample's map against a machine that applied the same records
// (machine.Resolve, the perf.data path's answer).
func TestApplyRecording(t *testing.T) {
	f, err := os.Open("../ingest/perfdata/testdata/system.data")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	rd, err := perfdata.NewFileReader(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	r := New(Options{NoFiles: true})
	m := machine.New(mapset.List)
	m.RegisterIdle()
	samples, found := 0, 0
	for rd.Next() {
		rec := rd.Record()
		if err := r.Apply(rec); err != nil {
			t.Fatal(err)
		}
		if err := m.Apply(rec); err != nil {
			t.Fatal(err)
		}
		if rec, ok := rec.(*perfdata.Sample); ok {
			v := r.Publish()
			mode := uint8(rec.CPUMode())
			got, gok := v.Find(mode, rec.Pid, rec.Tid, rec.IP)
			want, wok := m.Resolve(mode, rec.Pid, rec.Tid, rec.IP)
			if got != want || gok != wok {
				t.Fatalf("sample %d (pid %d tid %d ip %#x): %v %v, want %v %v", samples, rec.Pid, rec.Tid, rec.IP, got, gok, want, wok)
			}
			samples++
			if gok {
				found++
			}
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if samples == 0 || found == 0 {
		t.Fatalf("%d samples, %d in a map", samples, found)
	}
	t.Logf("%d samples, %d in a map", samples, found)
}

// With kcore loaded first, kernel addresses resolve to the kcore maps
// (the segment holding _stext is the kernel map) and their symbols
// through kallsyms, rebased to the segments' offsets.
func TestResolveKcore(t *testing.T) {
	r := New(Options{NoFiles: true})
	ks := []kallsyms.Symbol{
		{Addr: 0xffffffff81000000, Type: 'T', Name: "_text"},
		{Addr: 0xffffffff81000000, Type: 'T', Name: "_stext"},
		{Addr: 0xffffffff81000100, Type: 'T', Name: "do_syscall_64"},
		{Addr: 0xffffffff81000400, Type: 'T', Name: "_etext"},
	}
	segs := []index.Segment{
		{Vaddr: 0xffffffff81000000, Size: 0x2000000, Offset: 0x7fff81001000},
		{Vaddr: 0xffffc90000000000, Size: 0x100000, Offset: 0x4000},
	}
	if err := r.LoadKcore(segs, kallsyms.Landmarks(ks)); err != nil {
		t.Fatal(err)
	}
	r.LoadKallsyms(ks)
	v := r.Publish()
	loc := v.Resolve(CPUModeKernel, 1, 1, 0xffffffff81000123)
	if !loc.Found || loc.Map.Kind != index.KindKernel || loc.Map.End != 0xffffffff83000000 || loc.Symbol.Name != "do_syscall_64" || loc.Offset != 0x7fff81001123 {
		t.Errorf("kernel text: %+v", loc)
	}
	if loc := v.Resolve(CPUModeKernel, 1, 1, 0xffffc90000000010); !loc.Found || loc.Map.Kind != index.KindKcore || loc.Symbol.Name != "" {
		t.Errorf("vmalloc: %+v", loc)
	}
	// Kernel MMAPs are ignored once kcore is loaded.
	if err := r.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000, Filename: "[kernel.kallsyms]_text"}); err != nil {
		t.Fatal(err)
	}
	if loc := r.Publish().Resolve(CPUModeKernel, 1, 1, 0xffffffff81000123); loc.Map.End != 0xffffffff83000000 || loc.Symbol.Name != "do_syscall_64" {
		t.Errorf("after a kernel MMAP: %+v", loc)
	}
}
