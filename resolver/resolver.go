// Package resolver is the address-space index of a live profiler: one
// writer applies perf events (MMAP, MMAP2, COMM, FORK, EXIT, KSYMBOL,
// KMOD_SEC_MAP, and kcore and the kernel's symbols at start) with perf
// 6.1's rules, and any number of readers turn (pid, tid, address) into a
// map, a file offset and a symbol, without locks and without ever seeing
// a half-applied update.
//
// The rules are those of package machine, the same code kbench report
// runs on perf.data files, so the live path and the file path cannot
// drift. Versions are published as copy-on-write B-tree clones (package
// index): Publish costs O(log n) per map set changed, and a reader keeps
// the version it holds for as long as it likes.
//
// Writer methods must be called from one goroutine at a time; View and
// everything on a View may be called from any number of goroutines.
package resolver

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/internal/regular"
)

// Mmap, Ksymbol and the CPU modes are package machine's.
type (
	Mmap    = machine.Mmap
	Ksymbol = machine.Ksymbol
)

// CPU modes of a sample (perf_event_header.misc & PERF_RECORD_MISC_CPUMODE_MASK).
const (
	CPUModeKernel = machine.CPUModeKernel
	CPUModeUser   = machine.CPUModeUser
)

// Options configure a Resolver.
type Options struct {
	// Impl is the map implementation (default mapset.BTree; mapset.List
	// is the reference, whose versions are full copies).
	Impl mapset.Impl
	// NoFiles, when set, reads no DSO files: user-space addresses get no
	// symbols.
	NoFiles bool
}

// Resolver applies events and publishes versions of the address spaces.
type Resolver struct {
	m       *machine.Machine
	cur     atomic.Pointer[View]
	noFiles bool
	files   *fileCache
	kernel  *symbols.KernelTables // set by LoadKallsyms; never changed after
}

// New returns an empty resolver whose first version is published: it
// knows the idle thread (0, 0) "swapper", as perf does.
func New(opts Options) *Resolver {
	if opts.Impl.New == nil {
		opts.Impl = mapset.BTree
	}
	r := &Resolver{m: machine.New(opts.Impl), noFiles: opts.NoFiles, files: newFileCache()}
	r.m.RegisterIdle()
	r.Publish()
	return r
}

// Mmap applies an MMAP or MMAP2 event.
func (r *Resolver) Mmap(e Mmap) error { return r.m.Mmap(e) }

// Comm applies a COMM event.
func (r *Resolver) Comm(pid, tid uint32, comm string) { r.m.Comm(pid, tid, comm) }

// Fork applies a FORK event (misc as the record's header has it).
func (r *Resolver) Fork(pid, ppid, tid, ptid uint32, misc uint16) {
	r.m.Fork(pid, ppid, tid, ptid, misc)
}

// Exit applies an EXIT event.
func (r *Resolver) Exit(pid, tid uint32) { r.m.Exit(pid, tid) }

// Ksymbol applies a KSYMBOL event (a BPF program or out-of-line code).
func (r *Resolver) Ksymbol(k Ksymbol) error { return r.m.Ksymbol(k) }

// SectionMap applies a KMOD_SEC_MAP event's map (a module section's load
// range).
func (r *Resolver) SectionMap(sec index.Map) error { return r.m.SectionMap(sec) }

// LoadKcore rebuilds the kernel maps from kcore program-header segments
// (file order) with the kallsyms landmarks lm, as perf does when it reads
// /proc/kcore (Machine.LoadKcore); later kernel MMAPs are then ignored.
// Call LoadKallsyms afterwards for the symbols.
func (r *Resolver) LoadKcore(segs []index.Segment, lm index.Landmarks) error {
	return r.m.LoadKcore(segs, lm)
}

// Apply applies a decoded perf.data record: MMAP, MMAP2, COMM, FORK,
// EXIT and KSYMBOL change the address spaces; other records (samples,
// rounds, lost counts) change nothing and are ignored.
func (r *Resolver) Apply(rec perfdata.Record) error { return r.m.Apply(rec) }

// LoadKallsyms gives the kernel its symbols, as perf loads kallsyms at
// the first kernel sample: the symbols are split among the module maps
// known now (apply the kernel and module MMAPs first) and the kernel map
// takes the range of its symbols. Call it once, before the kernel's
// samples; later calls are ignored.
func (r *Resolver) LoadKallsyms(ks []kallsyms.Symbol) {
	if r.kernel != nil {
		return
	}
	if r.m.UsesKcore() {
		// After LoadKcore: maps__split_kallsyms_for_kcore, one table for
		// every kcore map (look up MapIP).
		r.kernel = &symbols.KernelTables{Kernel: symbols.Kcore(kallsyms.NewList(ks), r.m.Kernel().Find)}
		return
	}
	r.kernel = symbols.Kernel(ks, r.m.ModuleMaps())
	r.m.OnKernelLoad = nil
	r.m.LoadKernel()
	if r.kernel.Kernel.Len() > 0 {
		r.m.FixupKernel(r.kernel.Start, r.kernel.End)
	}
}

// Publish makes the events applied so far visible to readers as a new
// version and returns it.
func (r *Resolver) Publish() *View {
	v := r.newView()
	r.cur.Store(v)
	return v
}

// newView makes the next version without publishing it.
func (r *Resolver) newView() *View {
	return &View{mv: r.m.Publish(), kernel: r.kernel, files: r.files, noFiles: r.noFiles}
}

// View returns the version published last. Any goroutine may call it.
func (r *Resolver) View() *View { return r.cur.Load() }

// View is one version of the address spaces. It never changes.
type View struct {
	mv      *machine.View
	kernel  *symbols.KernelTables
	files   *fileCache
	noFiles bool
}

// Location is what an address resolves to.
type Location struct {
	// Map is the map holding the address; Found is false when there is
	// none.
	Map   index.Map
	Found bool
	// Offset is the address in the map's DSO (map_ip: the file offset of
	// a file-backed map, the address itself for the kernel and anonymous
	// memory).
	Offset uint64
	// Symbol is the symbol holding Offset, if any (Symbol.Name == "" when
	// none).
	Symbol symbols.Symbol
}

// Version is the writer's generation when the View was published: it
// grows with every change.
func (v *View) Version() uint64 { return v.mv.Generation() }

// Thread returns the thread tid as the View knows it.
func (v *View) Thread(tid uint32) (machine.ThreadInfo, bool) { return v.mv.Thread(tid) }

// Find returns the map holding addr for a sample of cpumode in thread
// (pid, tid), without symbols.
func (v *View) Find(cpumode uint8, pid, tid uint32, addr uint64) (index.Map, bool) {
	return v.mv.Resolve(cpumode, pid, tid, addr)
}

// Resolve returns the map, DSO offset and symbol of addr for a sample of
// cpumode in thread (pid, tid). A DSO's symbols are read from its file on
// first use (once, whichever goroutine needs them first).
func (v *View) Resolve(cpumode uint8, pid, tid uint32, addr uint64) Location {
	mp, ok := v.mv.Resolve(cpumode, pid, tid, addr)
	if !ok {
		return Location{}
	}
	loc := Location{Map: mp, Found: true, Offset: mp.MapIP(addr)}
	if t := v.table(mp); t != nil {
		loc.Symbol, _ = t.Find(loc.Offset)
	}
	return loc
}

// table returns the symbol table of map mp, or nil.
func (v *View) table(mp index.Map) *symbols.Table {
	switch mp.Kind {
	case index.KindKernel, index.KindKcore:
		if v.kernel != nil {
			return v.kernel.Kernel
		}
	case index.KindModule:
		if v.kernel != nil && v.kernel.Modules != nil {
			return v.kernel.Module(mp.DSO)
		}
	case index.KindBPFProg, index.KindBPFImage, index.KindOOL:
		return symbols.BPF(mp)
	case index.KindUser, index.KindAnon:
		if !v.noFiles && (mp.Kind == index.KindUser || strings.HasPrefix(mp.DSO, machine.PerfMapPrefix)) {
			return v.files.table(mp.DSO)
		}
	}
	return nil
}

// fileCache loads each DSO file's symbols once, for all Views.
type fileCache struct{ m sync.Map } // DSO → func() *symbols.Table

func newFileCache() *fileCache { return &fileCache{} }

func (c *fileCache) table(dso string) *symbols.Table {
	f, ok := c.m.Load(dso)
	if !ok {
		f, _ = c.m.LoadOrStore(dso, sync.OnceValue(func() *symbols.Table { return loadFile(dso) }))
	}
	return f.(func() *symbols.Table)()
}

// loadFile reads the symbols of a DSO file: a perf-PID.map's JIT symbols,
// else the ELF file's (with its separate debug file, if any). nil when it
// cannot be read.
func loadFile(dso string) *symbols.Table {
	if strings.HasPrefix(dso, machine.PerfMapPrefix) {
		f, err := regular.Open(dso)
		if err != nil {
			return nil
		}
		defer f.Close()
		t, _ := symbols.PerfMap(f)
		return t
	}
	t, err := symbols.ELFWithDebug(dso, symbols.FindDebug(dso))
	if err != nil {
		return nil
	}
	return t
}
