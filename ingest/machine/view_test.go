package machine

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
)

// viewWant is a machine's state when a View was published: what the
// View must answer for ever after.
type viewWant struct {
	threads map[uint32]ThreadInfo
	maps    map[uint32][]index.Map // by tid
	kernel  map[uint64]resolved    // the machine's answers at kernelAddrs
}

type resolved struct {
	mp index.Map
	ok bool
}

// kernelAddrs are the kernel addresses checkView asks a View about: the
// range randomOp maps modules and BPF programs in, and beyond.
func kernelAddrs(f func(a uint64)) {
	for a := uint64(0xffffffffc0000000); a < 0xffffffffc0000000+72<<12; a += 0x800 {
		f(a)
	}
}

func wantOf(m *Machine) viewWant {
	w := viewWant{threads: map[uint32]ThreadInfo{}, maps: map[uint32][]index.Map{}, kernel: map[uint64]resolved{}}
	kernelAddrs(func(a uint64) {
		mp, ok := m.Resolve(CPUModeKernel, 0, 0, a) // the module range: never the kernel map, which would load
		w.kernel[a] = resolved{mp, ok}
	})
	for tid, t := range m.threads {
		w.threads[tid] = ThreadInfo{t.Pid, t.Tid, t.Comm, t.Dead}
		w.maps[tid] = t.maps.set.Slice()
	}
	return w
}

func findIn(maps []index.Map, a uint64) (index.Map, bool) {
	for _, m := range maps {
		if m.Contains(a) {
			return m, true
		}
	}
	return index.Map{}, false
}

// randomOp applies one random record to m, from a small space of pids,
// tids and addresses so that records collide often.
func randomOp(rng *rand.Rand, m *Machine) {
	pid := uint32(rng.IntN(6) + 1)
	tid := pid
	if rng.IntN(3) == 0 {
		tid = pid*100 + uint32(rng.IntN(3))
	}
	addr := uint64(rng.IntN(64)) << 12
	size := uint64(rng.IntN(8)+1) << 12
	switch rng.IntN(10) {
	case 0, 1, 2, 3:
		m.Mmap(Mmap{CPUMode: CPUModeUser, Pid: pid, Tid: tid, Addr: addr, Len: size, Pgoff: uint64(rng.IntN(4)) << 12,
			Filename: []string{"/bin/a", "/lib/b.so", "//anon", "[heap]"}[rng.IntN(4)], Prot: ProtExec})
	case 4:
		child := uint32(rng.IntN(6) + 1)
		ctid := child
		if rng.IntN(2) == 0 {
			ctid = child*100 + uint32(rng.IntN(3))
		}
		m.Fork(child, pid, ctid, tid, uint16(rng.IntN(2))*MiscForkExec)
	case 5:
		m.Comm(pid, tid, []string{"a", "b", "c"}[rng.IntN(3)])
	case 6:
		m.Exit(pid, tid)
	case 7:
		m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffffc0000000 + addr, Len: size,
			Filename: []string{"/lib/modules/x/m1.ko", "[m2]"}[rng.IntN(2)]})
	case 8:
		m.Ksymbol(Ksymbol{Addr: 0xffffffffc0000000 + addr, Len: uint32(size), Type: 1, Unregister: rng.IntN(3) == 0, Name: "bpf_prog_x"})
	case 9:
		m.SampleThread(pid, tid)
	}
}

// TestViewsKeepTheirVersion applies random records and publishes Views
// along the way; every View must still answer, at the end, exactly what
// the machine held when it was published, on both implementations.
func TestViewsKeepTheirVersion(t *testing.T) {
	for _, im := range mapset.All {
		t.Run("impl="+im.Name, func(t *testing.T) {
			for seed := range uint64(20) {
				rng := rand.New(rand.NewPCG(seed, 7))
				m := New(im)
				m.RegisterIdle()
				m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000, Filename: "[kernel.kallsyms]_text"})
				var views []*View
				var wants []viewWant
				for range 300 {
					randomOp(rng, m)
					if rng.IntN(4) == 0 {
						views = append(views, m.Publish())
						wants = append(wants, wantOf(m))
					}
				}
				for i, v := range views {
					checkView(t, v, wants[i])
				}
			}
		})
	}
}

func checkView(t *testing.T, v *View, w viewWant) {
	t.Helper()
	if v.Threads() != len(w.threads) {
		t.Fatalf("view has %d threads, want %d", v.Threads(), len(w.threads))
	}
	tids := make([]uint32, 0, len(w.threads))
	for tid := range w.threads {
		tids = append(tids, tid)
	}
	slices.Sort(tids)
	for _, tid := range tids {
		got, ok := v.Thread(tid)
		if !ok || got != w.threads[tid] {
			t.Fatalf("thread %d: %+v %v, want %+v", tid, got, ok, w.threads[tid])
		}
		ms, ok := v.Maps(got.Pid, tid)
		if !ok || ms.Len() != len(w.maps[tid]) {
			t.Fatalf("thread %d: maps %v, want %d maps", tid, ok, len(w.maps[tid]))
		}
		for a := uint64(0); a < 72<<12; a += 0x800 {
			gm, gok := v.Resolve(CPUModeUser, got.Pid, tid, a)
			wm, wok := findIn(w.maps[tid], a)
			if gm != wm || gok != wok {
				t.Fatalf("thread %d addr %#x: %v %v, want %v %v", tid, a, gm, gok, wm, wok)
			}
		}
	}
	kernelAddrs(func(a uint64) {
		gm, gok := v.Resolve(CPUModeKernel, 0, 0, a)
		if want := w.kernel[a]; gm != want.mp || gok != want.ok {
			t.Fatalf("kernel addr %#x: %v %v, want %v %v", a, gm, gok, want.mp, want.ok)
		}
	})
	// A thread the View does not know uses its leader's maps.
	for _, tid := range tids {
		info := w.threads[tid]
		if info.Pid != info.Tid {
			continue
		}
		stranger := uint32(90000)
		gm, gok := v.Resolve(CPUModeUser, info.Pid, stranger, 0x3000)
		wm, wok := findIn(w.maps[tid], 0x3000)
		if gm != wm || gok != wok {
			t.Fatalf("unknown thread of pid %d: %v %v, want %v %v", info.Pid, gm, gok, wm, wok)
		}
	}
}

// A version names one state of one address space (or of the kernel
// maps): every answer Resolve gave under a version stays its answer
// while the version is current, through random records, kernel loads and
// lookups. The frame cache of perf report --children relies on it.
func TestVersionsIdentifyAnswers(t *testing.T) {
	type query struct {
		ver  uint64
		mode uint8
		addr uint64
	}
	type answer struct {
		mp index.Map
		ok bool
	}
	for _, im := range mapset.All {
		t.Run("impl="+im.Name, func(t *testing.T) {
			for seed := range uint64(20) {
				rng := rand.New(rand.NewPCG(seed, 11))
				m := New(im)
				m.OnKernelLoad = func(m *Machine) { m.FixupKernel(0xffffffff81000000, 0xffffffff81800000) }
				m.RegisterIdle()
				m.Mmap(Mmap{CPUMode: CPUModeKernel, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000, Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text"})
				seen := map[query]answer{}
				checked, versions := 0, map[uint64]bool{}
				for range 400 {
					randomOp(rng, m)
					for range 20 {
						pid := uint32(rng.IntN(6) + 1)
						tid := pid
						if rng.IntN(3) == 0 {
							tid = pid*100 + uint32(rng.IntN(3))
						}
						q := query{mode: CPUModeUser, addr: uint64(rng.IntN(72)) << 11}
						if rng.IntN(3) == 0 {
							q.mode, q.addr = CPUModeKernel, 0xffffffffc0000000+uint64(rng.IntN(72))<<11
							if rng.IntN(4) == 0 {
								q.addr = 0xffffffff81000000 + uint64(rng.IntN(32))<<20
							}
						}
						before := m.KernelVersion()
						if q.mode == CPUModeUser {
							before = m.SampleThread(pid, tid).MapsVersion()
						}
						mp, ok := m.Resolve(q.mode, pid, tid, q.addr)
						after := m.KernelVersion()
						if q.mode == CPUModeUser {
							after = m.SampleThread(pid, tid).MapsVersion()
						}
						if before != after {
							continue // this lookup changed them (a kernel load): not cached
						}
						q.ver = before
						versions[before] = true
						got := answer{mp, ok}
						if want, hit := seen[q]; hit {
							checked++
							if got != want {
								t.Fatalf("seed %d: %s addr %#x under version %d: %v %v, earlier %v %v",
									seed, map[uint8]string{CPUModeUser: "user", CPUModeKernel: "kernel"}[q.mode], q.addr, q.ver, mp, ok, want.mp, want.ok)
							}
						}
						seen[q] = got
					}
				}
				if checked < 1000 || len(versions) < 50 {
					t.Fatalf("seed %d: %d answers checked over %d versions: the test checks too little", seed, checked, len(versions))
				}
			}
		})
	}
}
