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
}

// ThreadInfo is a thread as a View holds it.
type ThreadInfo struct {
	Pid, Tid uint32
	Comm     string
	Dead     bool
}

// threadView is a thread and its address space as a View holds them: the
// maps are right there, so a lookup takes one B-tree search for the
// thread and one for the map.
type threadView struct {
	ThreadInfo
	proc uint64        // its address space's id
	maps mapset.Finder // its address space, frozen
}

// publisher tracks what changed since the last View.
type publisher struct {
	threads *btree.BTreeG[threadView]
	// procs holds each address space's frozen maps and members the
	// threads that share it, so that a change reaches all of them.
	procs   map[uint64]mapset.Finder
	members map[uint64]map[uint32]struct{}
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

// markProc and markKernel record that an address space or the kernel
// maps are about to change: they get a new version, and the next View
// copies them.
func (m *Machine) markProc(p *procMaps) {
	m.versions++
	p.ver = m.versions
	if m.pub != nil {
		m.pub.dirtyProcs[p] = struct{}{}
	}
}

func (m *Machine) markKernel() {
	m.versions++
	m.kver = m.versions
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
			procs:        make(map[uint64]mapset.Finder),
			members:      make(map[uint64]map[uint32]struct{}),
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
	// Threads first (their address space may have changed), then the
	// threads of every address space that changed.
	for tid := range p.dirtyThreads {
		old, had := p.threads.Get(threadView{ThreadInfo: ThreadInfo{Tid: tid}})
		if had {
			p.leave(old.proc, tid)
		}
		t, ok := m.threads[tid]
		if !ok {
			if had {
				p.threads.Delete(old)
			}
			continue
		}
		maps, ok := p.procs[t.maps.id]
		if !ok {
			maps = m.impl.Freeze(t.maps.set)
			p.procs[t.maps.id] = maps
		}
		p.join(t.maps.id, tid)
		p.threads.ReplaceOrInsert(threadView{ThreadInfo{t.Pid, t.Tid, t.Comm, t.Dead}, t.maps.id, maps})
	}
	for pm := range p.dirtyProcs {
		tids, ok := p.members[pm.id]
		if !ok {
			continue // no thread of the View uses it (yet)
		}
		maps := m.impl.Freeze(pm.set)
		p.procs[pm.id] = maps
		for tid := range tids {
			tv, _ := p.threads.Get(threadView{ThreadInfo: ThreadInfo{Tid: tid}})
			tv.maps = maps
			p.threads.ReplaceOrInsert(tv)
		}
	}
	if p.dirtyKernel {
		if m.kmaps.active() {
			p.kernel = m.kmaps.freeze() // perf's tree answers (see perfKmaps)
		} else {
			p.kernel = m.impl.Freeze(m.kernel)
		}
	}
	clear(p.dirtyThreads)
	clear(p.dirtyProcs)
	p.dirtyKernel = false
	return &View{gen: m.gen, kernel: p.kernel, vmlinux: m.vmlinux, has: m.has, threads: p.threads.Clone()}
}

// join and leave keep members: the threads of each address space. An
// address space without threads is forgotten.
func (p *publisher) join(proc uint64, tid uint32) {
	tids := p.members[proc]
	if tids == nil {
		tids = make(map[uint32]struct{})
		p.members[proc] = tids
	}
	tids[tid] = struct{}{}
}

func (p *publisher) leave(proc uint64, tid uint32) {
	tids := p.members[proc]
	delete(tids, tid)
	if len(tids) == 0 {
		delete(p.members, proc)
		delete(p.procs, proc)
	}
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
	return t.maps, true
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
