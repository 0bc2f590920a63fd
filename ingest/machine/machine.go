// Package machine replays the side-band records of a perf.data file —
// kernel and module MMAPs, KSYMBOL, user MMAP/MMAP2, FORK and EXIT — into
// address spaces with the rules of perf 6.1 (machine.c, map.c), and
// resolves sample addresses to maps. It runs on either map
// implementation (package mapset), so the B-tree and the list reference
// can be compared on real recordings.
//
// perf 6.1 inserts kernel, module and KSYMBOL maps without fixing
// overlaps, and its rbtree lookup then depends on the tree's shape. The
// index lets every new map win, as perf mainline does since v6.15; beside
// it, perfKmaps keeps perf 6.1's own tree, which answers kernel lookups
// once two kernel maps overlap (see perfKmaps).
package machine

import (
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// CPU modes of perf_event_header.misc (PERF_RECORD_MISC_*).
const (
	CPUModeUnknown     = 0
	CPUModeKernel      = 1
	CPUModeUser        = 2
	CPUModeHypervisor  = 3
	CPUModeGuestKernel = 4
	CPUModeGuestUser   = 5
)

// KernelMmapName is the filename prefix of the host kernel's MMAP record
// ("[kernel.kallsyms]_text").
const KernelMmapName = index.KernelDSO

// entryTrampoline is the x86_64 PTI entry trampoline map name.
const entryTrampoline = "__entry_SYSCALL_64_trampoline"

// Mmap is an MMAP or MMAP2 record, reduced to what the maps need.
type Mmap struct {
	CPUMode   uint8
	Pid, Tid  uint32
	Addr, Len uint64
	Pgoff     uint64
	Filename  string
	Prot      uint32 // MMAP2's; for MMAP, ProtExec unless it is data, as perf takes it
	Flags     uint32 // MMAP2 only
}

// Ksymbol is a PERF_RECORD_KSYMBOL record.
type Ksymbol struct {
	Addr       uint64
	Len        uint32
	Type       uint16 // 1 BPF, 2 OOL
	Unregister bool
	Name       string
}

// MmapOf reduces a decoded MMAP or MMAP2 record to an Mmap. An MMAP
// record has no prot: perf takes it as executable unless it says data
// (machine__process_mmap_event).
func MmapOf(rec *perfdata.Mmap) Mmap {
	prot := rec.Prot
	if rec.Type == perfdata.RecordMmap && rec.Misc&perfdata.MiscMmapData == 0 {
		prot = ProtExec
	}
	return Mmap{CPUMode: uint8(rec.CPUMode()), Pid: rec.Pid, Tid: rec.Tid, Addr: rec.Addr, Len: rec.Len,
		Pgoff: rec.Pgoff, Filename: rec.Filename, Prot: prot, Flags: rec.Flags}
}

// Apply applies a decoded side-band record in file order: MMAP, MMAP2,
// COMM, FORK, EXIT and KSYMBOL change the maps or the threads; other
// records (samples among them) change nothing.
func (m *Machine) Apply(rec perfdata.Record) error {
	switch rec := rec.(type) {
	case *perfdata.Mmap:
		return m.Mmap(MmapOf(rec))
	case *perfdata.Comm:
		m.Comm(rec.Pid, rec.Tid, rec.Comm)
	case *perfdata.Fork:
		m.Fork(rec.Pid, rec.Ppid, rec.Tid, rec.Ptid, rec.Misc)
	case *perfdata.Exit:
		m.Exit(rec.Pid, rec.Tid)
	case *perfdata.Ksymbol:
		return m.Ksymbol(KsymbolOf(rec))
	}
	return nil
}

// KsymbolOf reduces a decoded KSYMBOL record to a Ksymbol.
func KsymbolOf(rec *perfdata.Ksymbol) Ksymbol {
	return Ksymbol{Addr: rec.Addr, Len: rec.Len, Type: rec.KsymType, Unregister: rec.Unregister(), Name: rec.Name}
}

// ProtExec is PROT_EXEC in Mmap.Prot.
const ProtExec = 0x4

// VDSOName is the filename of the vdso's map.
const VDSOName = "[vdso]"

// PerfMapPrefix starts the DSO perf gives executable anonymous memory,
// /tmp/perf-PID.map: the file where JIT symbols live, which perf reads
// for any DSO so named (dso__load's perfmap case).
const PerfMapPrefix = "/tmp/perf-"

const (
	ksymTypeOOL = 2
	mapHugeTLB  = 0x40000 // MAP_HUGETLB
	unknownPid  = ^uint32(0)
)

// Machine holds the kernel maps and the threads of one recorded host.
type Machine struct {
	impl    mapset.Impl
	kernel  mapset.Set
	kmaps   *perfKmaps // perf's tree of the kernel maps
	vmlinux index.Map  // the kernel map, if hasVmlinux
	has     bool
	// RefRelocSym is the kernel MMAP's relocation symbol (name after
	// "[kernel.kallsyms]", address = the record's pgoff); zero when the
	// recording had kptr_restrict on.
	RefRelocName string
	RefRelocAddr uint64

	threads map[uint32]*Thread
	// KernelBuildIDs are the filenames of the recording's kernel-space
	// build-id entries (HEADER_BUILD_ID), in file order: perf creates
	// their DSOs first, so they name the kernel's DSO and the modules'
	// (see KernelDSO and ModuleDSO).
	KernelBuildIDs []string
	// recent are the threads findnewThread found last, by tid modulo
	// recentThreads: a system-wide recording's samples switch threads
	// all the time, and looking each sample's thread up in threads took
	// 4 % of the attributor's time on the -a -g children table.
	recent [recentThreads]*Thread

	// OnKernelLoad, if set, is called the first time a sample resolves to
	// the kernel map (or LoadKernel is called), as perf's map__load calls
	// dso__load_kernel_sym: it loads the kernel's symbols and changes the
	// kernel maps as that does, through FixupKernel (kallsyms) or
	// LoadKcore (kcore).
	OnKernelLoad func(m *Machine)
	loaded       bool
	// OnModuleLoad, if set, is called the first time Resolve finds a map
	// of a module DSO, before it answers, as perf's thread__find_map
	// loads a kernel-space map before mapping the address through it
	// (map__load, dso__load of the module): it may change the module's
	// map through LoadModule, and Resolve then answers with the map it
	// found, as changed.
	OnModuleLoad func(m *Machine, mod index.Map)
	// loading is the module map OnModuleLoad is loading, as LoadModule
	// leaves it, and its node in perf's tree (-1 when found in the
	// index).
	loading     index.Map
	loadingNode int32
	// OnCommRename, if set, is called with each command-name entry a
	// thread's first name renames in place (perf's comm__override), and
	// the name it had: whatever holds it and compares it by name sees
	// the new name.
	OnCommRename func(e *CommEntry, old string)
	modsLoaded   map[string]bool // module DSOs OnModuleLoad was called for
	// moduleFiles are the module DSOs' file names (perf's long name), by
	// DSO: the build-id entry's or the first MMAP's.
	moduleFiles map[string]string
	// usesKcore is machine__uses_kcore: once the kernel maps come from
	// kcore, kernel MMAP records are ignored.
	usesKcore bool
	// remapped is set when the kernel's load moved the kernel map
	// object itself (kcore, a vmlinux): the sample that loaded it then
	// resolves to the moved map.
	remapped bool
	gen      uint64 // see Generation
	versions uint64 // versions handed out (MapsVersion, KernelVersion)
	kver     uint64 // the kernel maps' version

	procs uint64     // address spaces made so far: the next one's id
	pub   *publisher // what changed since the last View, once Publish ran
}

// Generation changes whenever what Resolve would return may change: a
// map set or the thread table changes, or the kernel loads. Callers may
// cache Resolve's answers for one generation.
func (m *Machine) Generation() uint64 { return m.gen }

// MapsVersion identifies the thread's address space as it is now: no
// other address space, nor this one before or after a change, nor the
// kernel maps (KernelVersion) ever had the same version. A user-mode
// Resolve for the thread answers the same for an address as long as the
// version stays, whatever else changes in the machine: callers cache
// answers by it.
func (t *Thread) MapsVersion() uint64 { return t.maps.ver }

// Find returns the map of the thread's address space holding addr: a
// user-mode Resolve for a thread already looked up (SampleThread), as
// perf resolves a sample's frames in the thread it found once
// (thread__find_map).
func (t *Thread) Find(addr uint64) (index.Map, bool) { return t.maps.set.Find(addr) }

// KernelVersion identifies the kernel maps as they are now, as
// MapsVersion does an address space: a kernel-mode Resolve answers the
// same for an address as long as it stays (a Resolve that loads the
// kernel changes it).
func (m *Machine) KernelVersion() uint64 { return m.kver }

// MapsVersionOf is the version of the maps Resolve(cpumode, pid, tid, …)
// searches: the thread's address space (made if need be, as Resolve
// makes it) in user mode, the kernel maps otherwise.
func (m *Machine) MapsVersionOf(cpumode uint8, pid, tid uint32) uint64 {
	if cpumode == CPUModeUser {
		return m.findnewThread(pid, tid).MapsVersion()
	}
	return m.kver
}

// MapsID identifies the thread's address space: threads of a process
// share it. It is only meaningful within one Generation.
func (t *Thread) MapsID() uintptr { return uintptr(unsafe.Pointer(t.maps)) }

// AddressSpace numbers the thread's maps uniquely for the machine's
// life (MapsID's pointer may be reused once a process's maps are gone):
// perf's per-maps state, such as libunwind's caches, follows it.
func (t *Thread) AddressSpace() uint64 { return t.maps.id }

// CommSet reports whether the thread was named by a COMM record, a named
// parent's FORK or RegisterIdle (perf's thread->comm_set).
func (t *Thread) CommSet() bool { return t.commSet }

// Thread is one thread; threads of a process share its maps.
type Thread struct {
	Pid, Tid uint32
	Dead     bool
	// Comm is the thread's current command name: ":TID" until a COMM
	// record, a FORK from a named parent or RegisterIdle sets one
	// (thread__new, __thread__set_comm).
	Comm    string
	commSet bool
	comm    *CommEntry // see CommEntry
	maps    *procMaps
}

// CommEntry is one of a thread's command names, as perf's struct comm is:
// the thread's first name, ":TID", is overridden in place by the first
// COMM record or named parent's FORK that names the thread
// (comm__override), so that perf report shows that name for the samples
// taken before it too; every later name is an entry of its own.
type CommEntry struct{ Name string }

// CommEntry returns the thread's current command-name entry.
func (t *Thread) CommEntry() *CommEntry { return t.comm }

// setComm names t as __thread__set_comm does, and returns the entry it
// renamed in place (comm__override: the thread's first name), if any,
// and its old name.
func (t *Thread) setComm(name string) (renamed *CommEntry, old string) {
	if t.commSet {
		t.comm = &CommEntry{name}
	} else if t.comm.Name != name {
		old = t.comm.Name
		t.comm.Name, renamed = name, t.comm
	}
	t.Comm, t.commSet = name, true
	return renamed, old
}

// procMaps is an address space, shared by the threads of a process; id
// names it in Views.
type procMaps struct {
	set mapset.Set
	id  uint64
	ver uint64 // see Thread.MapsVersion
}

func (m *Machine) newProcMaps(set mapset.Set) *procMaps {
	m.procs++
	p := &procMaps{set: set, id: m.procs}
	m.markProc(p)
	return p
}

// New returns an empty machine whose map sets come from impl.
func New(impl mapset.Impl) *Machine {
	return &Machine{impl: impl, kernel: impl.New(), kmaps: newPerfKmaps(), loadingNode: -1, threads: make(map[uint32]*Thread)}
}

// Kernel returns the kernel maps.
func (m *Machine) Kernel() mapset.Set { return m.kernel }

// ModuleMaps returns the kernel's module maps (KernelMaps), among which
// kallsyms is split (maps__split_kallsyms).
func (m *Machine) ModuleMaps() []index.Map {
	var mods []index.Map
	for mp := range m.AllKernelMaps() {
		if mp.Kind == index.KindModule {
			mods = append(mods, mp)
		}
	}
	return mods
}

// KernelMaps returns every kernel map perf holds, by start, as
// maps__for_each_entry visits machine->kmaps: perf's own tree
// (perfKmaps) while it is kept, so that maps another overlapped and
// empty ones are there too, which the index has not; else the index's.
func (m *Machine) KernelMaps() []index.Map { return slices.Collect(m.AllKernelMaps()) }

// AllKernelMaps visits the maps KernelMaps returns without copying
// them, for the callers that look at each once (ModuleMaps, kcore's
// check of the modules, hasKernelMapNamed without perf's tree): a copy
// for each section of each module loaded was costly among the 20,000
// maps of a host with many BPF programs.
func (m *Machine) AllKernelMaps() iter.Seq[index.Map] {
	if m.kmaps.off {
		return m.kernel.All()
	}
	return func(yield func(index.Map) bool) {
		for n := m.kmaps.tree.First(); n != nil; n = n.Next() {
			if !yield(m.kmaps.maps[n.Value]) {
				return
			}
		}
	}
}

// UsesKcore reports whether the kernel maps come from kcore (LoadKcore):
// kernel symbols then go through symbols.Kcore.
func (m *Machine) UsesKcore() bool { return m.usesKcore }

// Vmlinux returns the kernel map and whether there is one.
func (m *Machine) Vmlinux() (index.Map, bool) { return m.vmlinux, m.has }

// Thread returns the thread tid, if known.
func (m *Machine) Thread(tid uint32) (*Thread, bool) {
	t, ok := m.threads[tid]
	return t, ok
}

// Maps returns the thread's address space.
func (t *Thread) Maps() mapset.Set { return t.maps.set }

// findnewThread is machine__findnew_thread (machine.c): a new thread
// that is not its process's leader shares the leader's maps, creating
// the leader if need be (thread__init_maps); a known thread whose pid
// was unknown (-1) takes pid and joins the leader's maps
// (machine__update_thread_pid).
func (m *Machine) findnewThread(pid, tid uint32) *Thread {
	recent := &m.recent[tid%recentThreads]
	if t := *recent; t != nil && t.Tid == tid {
		m.updateThreadPid(t, pid)
		return t
	}
	if t, ok := m.threads[tid]; ok {
		*recent = t
		m.updateThreadPid(t, pid)
		return t
	}
	m.gen++
	t := &Thread{Pid: pid, Tid: tid, Comm: ":" + strconv.Itoa(int(int32(tid)))}
	t.comm = &CommEntry{t.Comm}
	if pid != tid && pid != unknownPid {
		t.maps = m.findnewThread(pid, pid).maps
	} else {
		t.maps = m.newProcMaps(m.impl.New())
	}
	m.threads[tid] = t
	m.recent[tid%recentThreads] = t
	m.markThread(tid)
	return t
}

// recentThreads is the size of Machine.recent.
const recentThreads = 256

// forget drops thread tid, for findnewThread to make anew.
func (m *Machine) forget(tid uint32) {
	delete(m.threads, tid)
	if t := m.recent[tid%recentThreads]; t != nil && t.Tid == tid {
		m.recent[tid%recentThreads] = nil
	}
	m.markThread(tid)
}

// updateThreadPid is machine__update_thread_pid: only a thread with an
// unknown pid changes; its own maps, if any, are discarded for the
// leader's.
func (m *Machine) updateThreadPid(t *Thread, pid uint32) {
	if pid == t.Pid || pid == unknownPid || t.Pid != unknownPid {
		return
	}
	t.Pid = pid
	m.gen++
	m.markThread(t.Tid)
	if t.Pid == t.Tid {
		return
	}
	t.maps = m.findnewThread(pid, pid).maps
}

// Mmap applies an MMAP or MMAP2 record.
//
// An empty mapping changes nothing (perf would store an empty map that no
// lookup finds); a range that wraps past 2^64 is an error.
func (m *Machine) Mmap(r Mmap) error {
	m.gen++
	if r.Len == 0 {
		return nil
	}
	if r.Addr+r.Len < r.Addr {
		return fmt.Errorf("mmap %s: range %#x+%#x wraps past 2^64", r.Filename, r.Addr, r.Len)
	}
	if r.CPUMode == CPUModeKernel || r.CPUMode == CPUModeGuestKernel {
		if m.usesKcore {
			return nil // "If we have maps from kcore then we do not need or want any others"
		}
		return m.kernelMmap(r)
	}
	t := m.findnewThread(r.Pid, r.Tid)
	m.markProc(t.maps)
	return t.maps.set.FixupOverlapAndInsert(UserMap(r))
}

// UserMap is map__new for a user-space mapping: anonymous and no-DSO
// memory get the identity mapping (executable anonymous memory is named
// /tmp/perf-PID.map, where JIT symbols live), [vdso] gets pgoff 0.
func UserMap(r Mmap) index.Map {
	mp := index.Map{Start: r.Addr, End: r.Addr + r.Len, Pgoff: r.Pgoff, Mapping: index.MappingDSO, Kind: index.KindUser, DSO: r.Filename}
	anon := isAnon(r.Filename) || r.Flags&mapHugeTLB != 0
	noDSO := isNoDSO(r.Filename)
	switch {
	case anon || noDSO:
		mp.Mapping, mp.Kind = index.MappingIdentity, index.KindAnon
		if r.Prot&ProtExec != 0 {
			mp.DSO = PerfMapPrefix + itoa(r.Pid) + ".map"
		}
	case r.Filename == VDSOName:
		mp.Pgoff = 0
	}
	return mp
}

func isAnon(name string) bool {
	return name == "//anon" || strings.HasPrefix(name, "/dev/zero") || strings.HasPrefix(name, "/anon_hugepage")
}

func isNoDSO(name string) bool {
	return strings.HasPrefix(name, "[stack") || strings.HasPrefix(name, "/SYSV") || name == "[heap]"
}

func itoa(v uint32) string {
	if v == 0 {
		return "0"
	}
	var b [10]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}

// IsKernelMmap reports whether a kernel MMAP's filename names the kernel
// itself ("[kernel.kallsyms]_text", "[kernel.kallsyms]"), as
// machine__process_kernel_mmap_event tells it from a module's.
func IsKernelMmap(filename string) bool {
	return strings.HasPrefix(filename, KernelMmapName[:len(KernelMmapName)-1])
}

// IsModuleMmap reports whether a kernel MMAP's filename names a module
// (a path, or "[name]" other than the kernel's), as
// machine__process_kernel_mmap_event tells it.
func IsModuleMmap(filename string) bool {
	return strings.HasPrefix(filename, "/") || (!IsKernelMmap(filename) && strings.HasPrefix(filename, "["))
}

// RefReloc returns the reference symbol a kernel MMAP of the kernel
// itself records ("_text" of "[kernel.kallsyms]_text") and its address,
// the MMAP's pgoff; ok is false when it records none (pgoff 0, or not
// the kernel's MMAP).
func RefReloc(filename string, pgoff uint64) (name string, addr uint64, ok bool) {
	if !IsKernelMmap(filename) || pgoff == 0 {
		return "", 0, false
	}
	return strings.TrimPrefix(filename, KernelMmapName), pgoff, true
}

// kernelMmap is machine__process_kernel_mmap_event.
func (m *Machine) kernelMmap(r Mmap) error {
	m.markKernel()
	name := r.Filename
	isKernel := IsKernelMmap(name)
	switch {
	case IsModuleMmap(name):
		mod := index.Map{Start: r.Addr, End: r.Addr + r.Len, Mapping: index.MappingDSO, Kind: index.KindModule, DSO: m.ModuleDSO(name)}
		if _, ok := m.moduleFiles[mod.DSO]; !ok {
			// machine__findnew_module_dso names a new DSO by the MMAP;
			// one the build-id table made keeps that entry's name.
			if m.moduleFiles == nil {
				m.moduleFiles = map[string]string{}
			}
			file := name
			if strings.HasPrefix(mod.DSO, "/") {
				file = mod.DSO
			}
			m.moduleFiles[mod.DSO] = file
		}
		m.kmaps.insert(mod)
		return m.kernel.FixupOverlapAndInsert(mod)
	case isKernel:
		// __machine__create_kernel_maps destroys the previous kernel map.
		if m.has {
			m.kernel.Remove(m.vmlinux)
		}
		m.vmlinux = index.Map{Start: r.Addr, End: r.Addr + r.Len, Mapping: index.MappingIdentity, Kind: index.KindKernel, DSO: m.KernelDSO()}
		m.kmaps.setKernel(m.vmlinux)
		m.has, m.loaded, m.remapped = true, false, false
		if ref, addr, ok := RefReloc(name, r.Pgoff); ok {
			m.RefRelocName, m.RefRelocAddr = ref, addr
		}
		if m.vmlinux.Start == m.vmlinux.End {
			m.has = false
			return nil
		}
		return m.kernel.FixupOverlapAndInsert(m.vmlinux)
	case name == entryTrampoline:
		tr := index.Map{Start: r.Addr, End: r.Addr + r.Len, Pgoff: r.Pgoff, Mapping: index.MappingDSO, Kind: index.KindKernel, DSO: m.KernelDSO()}
		m.kmaps.insert(tr)
		return m.kernel.FixupOverlapAndInsert(tr)
	}
	return nil
}

// KernelDSO is the name perf prints for the kernel's maps: the first
// kernel-space build-id entry that is not a module (a vmlinux path, or
// "[kernel.kallsyms]" itself), as machine__process_kernel_mmap_event picks
// the kernel DSO among the DSOs the build-id table made; else
// "[kernel.kallsyms]".
func (m *Machine) KernelDSO() string {
	if i := KernelEntry(m.KernelBuildIDs); i >= 0 {
		return m.KernelBuildIDs[i]
	}
	return index.KernelDSO
}

// KernelEntry returns the index of the kernel build-id entry, of names
// (the file names of the kernel entries of a build-id table, in order),
// that perf names the kernel DSO by (machine__process_kernel_mmap_event):
// the first that is not a module's; -1 for none.
func KernelEntry(names []string) int {
	for i, f := range names {
		if _, kmod := index.KmodName(f); !kmod {
			return i
		}
	}
	return -1
}

// ModuleDSO is the name perf prints for a module map made from a kernel
// MMAP of filename: the build-id entry's path when the build-id table made
// the module's DSO first (machine__findnew_module_dso finds it by its
// short name), else the short name ("[nf_tables]" for
// /lib/modules/…/nf_tables.ko).
func (m *Machine) ModuleDSO(filename string) string {
	short, _ := index.KmodName(filename)
	for _, f := range m.KernelBuildIDs {
		if s, kmod := index.KmodName(f); kmod && s == short {
			return f
		}
	}
	return short
}

// Ksymbol applies a KSYMBOL record (machine__process_ksymbol): a program
// whose address already lies in a map gets no map of its own;
// unregistering removes the whole map holding the address unless it is
// the kernel map.
func (m *Machine) Ksymbol(k Ksymbol) error {
	m.gen++
	m.markKernel()
	m.kmaps.ksymbol(k)
	found, ok := m.kernel.Find(k.Addr)
	if k.Unregister {
		if ok && !(m.has && found == m.vmlinux) {
			m.kernel.Remove(found)
		}
		return nil
	}
	if ok || k.Len == 0 {
		return nil
	}
	return m.kernel.FixupOverlapAndInsert(ksymbolMap(k))
}

// ksymbolMap is the map of a registered KSYMBOL's program.
func ksymbolMap(k Ksymbol) index.Map {
	kind := index.KindBPFProg
	switch {
	case k.Type == ksymTypeOOL:
		kind = index.KindOOL
	case strings.HasPrefix(k.Name, "bpf_trampoline_"), strings.HasPrefix(k.Name, "bpf_dispatcher_"):
		kind = index.KindBPFImage
	}
	return index.Map{Start: k.Addr, End: k.Addr + uint64(k.Len), Mapping: index.MappingDSO, Kind: kind, DSO: k.Name}
}

// MiscForkExec is PERF_RECORD_MISC_FORK_EXEC (1 << 13 of a FORK record's
// misc): perf record sets it on the FORK records it synthesizes for
// tasks already running when recording starts
// (perf_event__synthesize_fork).
const MiscForkExec = 1 << 13

// SectionMap applies a KMOD_SEC_MAP record's map (kind
// index.KindModuleSection): the section's load range wins over the coarse
// module map it lies in.
func (m *Machine) SectionMap(sec index.Map) error {
	m.gen++
	m.markKernel()
	m.kmaps.off = true // perf 6.1 has no section maps
	if sec.Start == sec.End {
		return nil
	}
	return m.kernel.FixupOverlapAndInsert(sec)
}

// Fork applies a FORK record with its header misc (0 as the kernel
// writes it)
// (machine__process_fork_event and thread__fork in perf 6.1):
//
//   - a known thread ptid that belongs to another process than ppid is
//     forgotten and recreated ("removing erroneous parent thread");
//   - a thread already using the child's tid is forgotten;
//   - the child is created (sharing its leader's maps when pid != tid);
//   - a child of another process than its parent gets a copy of the
//     parent's maps (thread__clone_maps), unless misc has MiscForkExec:
//     perf does not clone for synthesized FORKs, whose process's own
//     MMAPs follow. A thread of the parent's process shares its maps.
func (m *Machine) Fork(pid, ppid, tid, ptid uint32, misc uint16) {
	m.gen++
	parent := m.findnewThread(ppid, ptid)
	if parent.Pid != ppid {
		m.forget(ptid)
		parent = m.findnewThread(ppid, ptid)
	}
	m.forget(tid)
	child := m.findnewThread(pid, tid)
	if parent.commSet { // thread__fork
		m.renamed(child.setComm(parent.Comm))
		m.markThread(tid)
	}
	if misc&MiscForkExec != 0 || child.Pid == parent.Pid || child.maps == parent.maps {
		return
	}
	child.maps.set = m.impl.Clone(parent.maps.set)
	m.markProc(child.maps)
}

// Comm applies a COMM record: the thread (made if need be) takes the
// name (machine__process_comm_event).
func (m *Machine) Comm(pid, tid uint32, comm string) {
	t := m.findnewThread(pid, tid)
	m.renamed(t.setComm(comm))
	m.markThread(tid)
}

// renamed tells OnCommRename of e, a command-name entry renamed in place
// from old, if any.
func (m *Machine) renamed(e *CommEntry, old string) {
	if e != nil && m.OnCommRename != nil {
		m.OnCommRename(e, old)
	}
}

// SampleThread returns the thread (pid, tid), making it as perf's
// machine__resolve does for every sample (machine__findnew_thread).
func (m *Machine) SampleThread(pid, tid uint32) *Thread {
	return m.findnewThread(pid, tid)
}

// RegisterIdle makes the idle thread, (0, 0) named "swapper", as perf
// does before it processes any event (perf_session__register_idle_thread).
func (m *Machine) RegisterIdle() { m.Comm(0, 0, "swapper") }

// Exit applies an EXIT record. perf 6.1 only marks the thread dead
// (thread__exited); it keeps resolving samples against its maps until a
// FORK reuses the tid.
func (m *Machine) Exit(pid, tid uint32) {
	if t, ok := m.threads[tid]; ok {
		t.Dead = true
		m.markThread(tid)
	}
}

// Resolve returns the map holding addr for a sample of cpumode taken in
// thread (pid, tid): kernel modes look in the kernel maps, user mode in
// the thread's maps; other modes (hypervisor, guests) resolve to nothing.
// The first kernel-map hit loads the kernel (OnKernelLoad), the first hit
// in a module's map the module (OnModuleLoad). The map found before the
// load is the one returned, as in perf, with what the load changed in it
// (a module's pgoff; a kcore or vmlinux load moves the kernel map object
// itself, so then the moved kernel map is returned); maps the load adds
// answer later lookups only.
func (m *Machine) Resolve(cpumode uint8, pid, tid uint32, addr uint64) (index.Map, bool) {
	switch cpumode {
	case CPUModeKernel:
		if m.kmaps.active() {
			return m.resolvePerfKmaps(addr)
		}
		mp, ok := m.kernel.Find(addr)
		if ok && m.has && !m.loaded && mp == m.vmlinux {
			m.load()
			if m.remapped {
				return m.vmlinux, true
			}
		}
		if ok && mp.Kind == index.KindModule {
			mp = m.loadModule(mp, -1)
		}
		return mp, ok
	case CPUModeUser:
		return m.findnewThread(pid, tid).Find(addr)
	}
	return index.Map{}, false
}

// resolvePerfKmaps is Resolve's kernel lookup in perf's tree of the
// kernel maps (maps__find); the kernel map loads as there.
func (m *Machine) resolvePerfKmaps(addr uint64) (index.Map, bool) {
	v := m.kmaps.find(addr)
	if v < 0 {
		return index.Map{}, false
	}
	if v == m.kmaps.kernel && m.has && !m.loaded {
		m.load()
		if m.remapped {
			return m.vmlinux, true
		}
	}
	mp := m.kmaps.maps[v] // after the kernel load's fixups
	if mp.Kind == index.KindModule {
		mp = m.loadModule(mp, v)
	}
	return mp, true
}

// loadModule calls OnModuleLoad for the module map mp (node v of perf's
// tree, -1 for none) the first time a map of its DSO is found, and
// returns mp as the load left it. perf's thread__find_map answers with
// the map it found before map__load, whatever maps the load adds: the
// load changes only that map's pgoff (LoadModule).
func (m *Machine) loadModule(mp index.Map, v int32) index.Map {
	if m.OnModuleLoad == nil || m.modsLoaded[mp.DSO] {
		return mp
	}
	if m.modsLoaded == nil {
		m.modsLoaded = map[string]bool{}
	}
	m.modsLoaded[mp.DSO] = true
	m.loading, m.loadingNode = mp, v
	m.OnModuleLoad(m, mp)
	mp, m.loadingNode = m.loading, -1
	return mp
}

// ModuleFile is the file name perf gives the module DSO dso (its long
// name, where dso__load looks for the module's file below --symfs):
// the build-id entry that named the DSO, else the path or "[name]" of
// the first MMAP of it; "" when no MMAP mapped it.
func (m *Machine) ModuleFile(dso string) string { return m.moduleFiles[dso] }

// LoadModule changes the kernel maps as perf 6.1's dso__load_sym does
// while it reads a module file's symbols (dso__process_kernel_symbol
// with kmodule): the module map mod (as Resolve found it) takes pgoff
// text, the file offset of the module's .text, when hasText (a symbol
// lay in .text), so that MapIP gives file offsets; the map stays where
// it is in perf's tree, and other maps of the same DSO are left alone,
// as perf changes only the map being loaded. Each section map goes in
// after it, as LoadVmlinux's do, unless a map of its name is there
// already (maps__find_by_name: the section's symbols then belong to
// that map's DSO).
func (m *Machine) LoadModule(mod index.Map, text uint64, hasText bool, sections []index.Map) error {
	m.gen++
	m.markKernel()
	if hasText {
		node := int32(-1) // mod's node is not known: found by value
		if mod == m.loading {
			m.loading.Pgoff = text
			node = m.loadingNode
		}
		m.kmaps.setPgoff(node, mod, text)
		// The index's copy: mod itself unless overlaps cut it, when
		// Resolve answers from perf's tree.
		if cur, ok := m.kernel.Find(mod.Start); ok && cur.Kind == index.KindModule && cur.DSO == mod.DSO && cur.Pgoff != text {
			m.kernel.Remove(cur)
			cur.Pgoff = text
			if err := m.kernel.FixupOverlapAndInsert(cur); err != nil {
				return err
			}
		}
	}
	var fresh []index.Map
	for _, sec := range sections {
		if !m.hasKernelMapNamed(sec.DSO) {
			fresh = append(fresh, sec)
		}
	}
	return m.insertSections(fresh)
}

// hasKernelMapNamed reports whether a kernel map's DSO is dso
// (maps__find_by_name: among all perf holds, KernelMaps).
func (m *Machine) hasKernelMapNamed(dso string) bool {
	if !m.kmaps.off {
		return m.kmaps.hasName(dso)
	}
	for mp := range m.AllKernelMaps() {
		if mp.DSO == dso {
			return true
		}
	}
	return false
}

// LoadKernel loads the kernel map's symbols now if there is a kernel map
// and they are not loaded yet (perf's machine__get_kernel_start, which
// perf script runs at its first sample when it fetches instructions).
func (m *Machine) LoadKernel() {
	if m.has && !m.loaded {
		m.load()
	}
}

// load runs OnKernelLoad once per kernel map.
func (m *Machine) load() {
	m.gen++
	m.markKernel()
	m.loaded = true
	if m.OnKernelLoad != nil {
		m.OnKernelLoad(m)
	}
}

// FixupKernel sets the kernel map's range to [start, end), as
// map__fixup_start and map__fixup_end do after kallsyms loading; an empty
// or unchanged range is ignored.
func (m *Machine) FixupKernel(start, end uint64) {
	m.gen++
	m.markKernel()
	if !m.has || start >= end {
		return
	}
	m.kmaps.fixupKernel(start, end)
	if start == m.vmlinux.Start && end == m.vmlinux.End {
		return
	}
	m.kernel.Remove(m.vmlinux)
	m.vmlinux.Start, m.vmlinux.End = start, end
	m.kernel.MergeIn(m.vmlinux)
	// MergeIn may have cut the kernel map around other kernel maps; the
	// piece holding the old start is the one perf would find.
	if got, ok := m.kernel.Find(start); ok && got.Kind == index.KindKernel {
		m.vmlinux = got
	}
}

// IsKmodule reports whether perf 6.1 counts mp as a kernel module map
// (__map__is_kmodule): a kernel map that is not the kernel map, not an
// extra kernel map (the x86_64 entry trampoline), not a BPF program
// (named "bpf_prog_…"), not a BPF image and not out-of-line code. The
// section maps a module file's load adds ("[mod].init.text", LoadModule)
// are module maps to perf too, whose names no modules file lists.
// Section maps of KMOD_SEC_MAP records, which perf 6.1 never creates,
// are not counted.
func (m *Machine) IsKmodule(mp index.Map) bool {
	switch {
	case m.has && mp == m.vmlinux, mp.Kind == index.KindKernel, mp.Kind == index.KindKcore:
		return false
	case mp.Kind == index.KindBPFImage, mp.Kind == index.KindOOL, mp.Kind == index.KindModuleSection:
		return false
	case strings.HasPrefix(mp.DSO, "bpf_prog_"):
		return false
	}
	return mp.Kind == index.KindModule || mp.Kind == index.KindBPFProg || mp.Kind == index.KindKernelSection
}

// LoadKcore rebuilds the kernel maps from kcore segments (file order) as
// dso__load_kcore does once perf has validated them: every map but the
// kernel map and the BPF programs (DSOs named "bpf_prog_…") goes, the
// kernel map becomes the segment index.KcoreKernelSegment picks with the
// kallsyms landmarks lm, and the other segments are merged around what is
// there. The maps are built by the index's kcore load (the kernel segment
// first, then the rest in the kcore segment order), which equals perf 6.1
// except where segments nest around the kernel segment (see
// index.LoadKcore). Later kernel MMAPs are ignored.
func (m *Machine) LoadKcore(segs []index.Segment, lm index.Landmarks) error {
	m.gen++
	m.markKernel()
	if err := index.CheckSegments(segs); err != nil {
		return err
	}
	m.kmaps.off = true // kcore's maps replace perf's tree: not modelled
	repl, text, err := index.KcoreKernelSegment(segs, lm)
	if err != nil {
		return err
	}
	m.kernel.RemoveFunc(func(mp index.Map) bool {
		return !(mp.Kind == index.KindBPFProg && strings.HasPrefix(mp.DSO, "bpf_prog_"))
	})
	kernel, err := m.impl.LoadKcoreAt(m.kernel, segs, repl, text)
	if err != nil {
		return err
	}
	m.vmlinux, m.has, m.loaded, m.usesKcore, m.remapped = kernel, true, true, true, true
	return nil
}

// LoadVmlinux changes the kernel maps as perf 6.1's dso__load_vmlinux does
// while it reads a vmlinux's symbols (dso__process_kernel_symbol): the
// kernel map object moves to the .text section text (start, end and pgoff
// from the file, MapIP by offset), out of perf's tree and in again, and a
// map for each other section holding symbols (kind
// index.KindKernelSection) goes in after it, in order, without fixing
// overlaps (maps__insert). A nil text leaves the kernel map where it is,
// as perf does when no symbol lies in .text. The map that loaded the
// kernel then resolves to the moved map (Resolve).
func (m *Machine) LoadVmlinux(text *index.Map, sections []index.Map) error {
	m.gen++
	m.markKernel()
	if text != nil && m.has {
		if text.End <= text.Start {
			return fmt.Errorf("vmlinux .text map %#x-%#x: empty or wrapping past 2^64", text.Start, text.End)
		}
		m.kmaps.moveKernel(*text)
		m.kernel.Remove(m.vmlinux)
		m.vmlinux, m.remapped = *text, true
		if err := m.kernel.FixupOverlapAndInsert(*text); err != nil {
			return err
		}
	}
	return m.insertSections(sections)
}

// insertSections inserts the section maps a kernel image's symbols made
// (dso__process_kernel_symbol), in order, into perf's tree without fixing
// overlaps (maps__insert). A map that is
// empty, or whose end wraps past 2^64 (a malformed file's sh_addr +
// sh_size), takes its place in perf's tree, but no address finds it there
// (maps__find goes right of it), so the index does not get it.
func (m *Machine) insertSections(sections []index.Map) error {
	for _, sec := range sections {
		m.kmaps.insert(sec)
		if sec.End <= sec.Start {
			continue
		}
		if err := m.kernel.FixupOverlapAndInsert(sec); err != nil {
			return fmt.Errorf("section map %s: %w", sec.DSO, err)
		}
	}
	return nil
}
