package machine

import (
	"github.com/google/btree"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
)

// View is one published version of a machine: its kernel maps, threads
// and address spaces as they were when Publish made it. A View never
// changes, so any number of goroutines may use it while the machine goes
// on applying records. Publishing costs O(log n) per map set or thread
// changed since the previous version (copy-on-write B-trees), not a copy
// of the machine.
type View struct {
	gen     uint64
	kernel  mapset.Finder
	vmlinux index.Map
	has     bool
	threads *btree.BTreeG[threadView] // by tid
	procs   *btree.BTreeG[procView]   // by address-space id
}

// ThreadInfo is a thread as a View holds it.
type ThreadInfo struct {
	Pid, Tid uint32
	Comm     string
	Dead     bool
}

type threadView struct {
	ThreadInfo
	proc uint64 // the procView of its address space
}

type procView struct {
	id   uint64
	maps mapset.Finder
}

// publisher tracks what changed since the last View.
type publisher struct {
	threads *btree.BTreeG[threadView]
	procs   *btree.BTreeG[procView]
	kernel  mapset.Finder
	// dirty threads (by tid, possibly deleted), address spaces, kernel.
	dirtyThreads map[uint32]struct{}
	dirtyProcs   map[*procMaps]struct{}
	dirtyKernel  bool
}

const viewDegree = 32 // as index's B-tree

func (m *Machine) markThread(tid uint32) {
	if m.pub != nil {
		m.pub.dirtyThreads[tid] = struct{}{}
	}
}

func (m *Machine) markProc(p *procMaps) {
	if m.pub != nil {
		m.pub.dirtyProcs[p] = struct{}{}
	}
}

func (m *Machine) markKernel() {
	if m.pub != nil {
		m.pub.dirtyKernel = true
	}
}

// Publish returns a View of the machine as it is now. The first call
// costs O(threads); later ones O(log n) per thread or map set changed
// since the call before. Publish must be called by the goroutine that
// changes the machine; the View it returns may be handed to any others.
func (m *Machine) Publish() *View {
	p := m.pub
	if p == nil {
		p = &publisher{
			threads:      btree.NewG(viewDegree, func(a, b threadView) bool { return a.Tid < b.Tid }),
			procs:        btree.NewG(viewDegree, func(a, b procView) bool { return a.id < b.id }),
			dirtyThreads: make(map[uint32]struct{}),
			dirtyProcs:   make(map[*procMaps]struct{}),
			dirtyKernel:  true,
		}
		m.pub = p
		for tid, t := range m.threads {
			p.dirtyThreads[tid] = struct{}{}
			p.dirtyProcs[t.maps] = struct{}{}
		}
	}
	for pm := range p.dirtyProcs {
		p.procs.ReplaceOrInsert(procView{id: pm.id, maps: m.impl.Freeze(pm.set)})
	}
	for tid := range p.dirtyThreads {
		t, ok := m.threads[tid]
		if !ok {
			p.threads.Delete(threadView{ThreadInfo: ThreadInfo{Tid: tid}})
			continue
		}
		if _, ok := p.procs.Get(procView{id: t.maps.id}); !ok {
			p.procs.ReplaceOrInsert(procView{id: t.maps.id, maps: m.impl.Freeze(t.maps.set)})
		}
		p.threads.ReplaceOrInsert(threadView{ThreadInfo{t.Pid, t.Tid, t.Comm, t.Dead}, t.maps.id})
	}
	if p.dirtyKernel {
		p.kernel = m.impl.Freeze(m.kernel)
	}
	clear(p.dirtyThreads)
	clear(p.dirtyProcs)
	p.dirtyKernel = false
	return &View{gen: m.gen, kernel: p.kernel, vmlinux: m.vmlinux, has: m.has,
		threads: p.threads.Clone(), procs: p.procs.Clone()}
}

// Generation is the machine's Generation when the View was published.
func (v *View) Generation() uint64 { return v.gen }

// Thread returns the thread tid, if the View has it.
func (v *View) Thread(tid uint32) (ThreadInfo, bool) {
	t, ok := v.threads.Get(threadView{ThreadInfo: ThreadInfo{Tid: tid}})
	return t.ThreadInfo, ok
}

// Threads returns the number of threads.
func (v *View) Threads() int { return v.threads.Len() }

// Vmlinux returns the kernel map and whether there is one.
func (v *View) Vmlinux() (index.Map, bool) { return v.vmlinux, v.has }

// Kernel returns the kernel maps.
func (v *View) Kernel() mapset.Finder { return v.kernel }

// Maps returns the address space of thread tid, as Machine.Resolve would
// use it: a thread the View does not have uses its process leader's
// (pid's) maps, as perf's machine__findnew_thread makes a new thread
// share them; ok is false when neither is known.
func (v *View) Maps(pid, tid uint32) (maps mapset.Finder, ok bool) {
	t, ok := v.threads.Get(threadView{ThreadInfo: ThreadInfo{Tid: tid}})
	if !ok {
		if pid == tid || pid == unknownPid {
			return nil, false
		}
		if t, ok = v.threads.Get(threadView{ThreadInfo: ThreadInfo{Tid: pid}}); !ok {
			return nil, false
		}
	}
	p, ok := v.procs.Get(procView{id: t.proc})
	return p.maps, ok
}

// Resolve is Machine.Resolve on the View, without its side effects: the
// map holding addr for a sample of cpumode in thread (pid, tid). It does
// not load the kernel's symbols; a machine that publishes Views loads
// them first (Machine.LoadKernel).
func (v *View) Resolve(cpumode uint8, pid, tid uint32, addr uint64) (index.Map, bool) {
	switch cpumode {
	case CPUModeKernel:
		return v.kernel.Find(addr)
	case CPUModeUser:
		if ms, ok := v.Maps(pid, tid); ok {
			return ms.Find(addr)
		}
	}
	return index.Map{}, false
}
