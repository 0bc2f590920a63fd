package attrib

import (
	"encoding/hex"
	"path/filepath"
	"strings"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/internal/regular"
)

// symbolizer names the symbol of a resolved address the way perf 6.1
// does, loading each DSO's symbols once, on first use.
type symbolizer struct {
	// kallsyms are the kernel symbols, until the kernel's tables are
	// made from them; hasKallsyms says whether there are any.
	kallsyms    *kallsyms.List
	hasKallsyms bool
	// load, when set, delivers kallsyms and the kernel tables built from
	// them for a machine without module maps, prepared in the background;
	// it may be called once.
	load     func() preparedKernel
	err      error // from load
	kernel   *symbols.KernelTables
	pre      *symbols.KernelTables // built in the background for a machine without module maps
	preDelta uint64                // the relocation pre was made with
	// ref is where kallsyms has the reference symbol name (kernelDelta):
	// finding it scans every kallsyms symbol, and loading the kernel
	// asks twice.
	ref struct {
		name      string
		addr      uint64
		ok, known bool
	}
	m        *machine.Machine  // the recording's machine (its reference symbol)
	buildIDs map[string][]byte // DSO name → build id, from the recording
	debugDir string            // perf's build-id cache (~/.debug); "" for none
	files    map[string]*symbols.Table
	// failedSeen holds the DSOs whose table perf failed to load
	// (symbols.Table.LoadFailed) once a lookup found nothing in it.
	failedSeen map[string]bool
	lastFile   struct { // the last file looked up
		dso string
		t   *symbols.Table
	}
	sections map[string]*symbols.Table // by section map DSO ("[mod].sec")
	// sectionFiles maps a section map's DSO ("[mod].sec") to its module
	// file, from KMOD_SEC_MAP records.
	sectionFiles map[string]string
	prefetch     *prefetch // user DSO files read ahead; nil for none
	noFiles      bool      // read no DSO files
	symfs        string    // perf's --symfs: where DSO files are looked for
	vdso         []byte    // Options.VDSO
	bpf          map[index.Map]*symbols.Table
	kernelMods   func() []index.Map // the kernel's module maps, for the split

	// kcore, when set, names the kcore files beside the kallsyms file
	// (nil from it: none, the file being known only then);
	// kcoreTable is the kernel DSO's table once kcore was loaded, and
	// kcoreNote says why it was not.
	kcore      func() *Kcore
	kcoreUsed  string // the kcore file used
	kcoreTable *symbols.Table
	kcoreNote  string
	// kernelLoaded is set when the kernel map's symbols were loaded;
	// modLoaded holds the module DSOs (by module name) loaded before
	// that (loadModuleFile), with or without a file.
	kernelLoaded bool
	modLoaded    map[string]bool
	// moduleTables are the tables of the module DSOs whose symbols came
	// from their files (loadModuleFile), by DSO; moduleText their .text
	// sections while the kernel's symbols are not in, which add to them.
	moduleTables map[string]*symbols.Table
	moduleText   map[string]*symbols.KernelSection
	lastFinds    map[string]*lastFind // by module DSO (findIn)
	// vmlinuxOnly and vmlinuxPath are Options.Vmlinux and
	// Options.VmlinuxPath; vmlinuxUsed is the vmlinux the kernel's
	// symbols came from, and vmlinuxNote why Options.Vmlinux could not
	// be used. kernelSections are its sections' tables, by their maps'
	// DSO. kernelMmapBuildID is the build id the kernel's MMAP2 gave
	// its DSO.
	vmlinuxOnly       string
	vmlinuxPath       []string
	vmlinuxUsed       string
	vmlinuxNote       string
	mapsErr           error // the kernel maps could not take a vmlinux's or module file's
	kernelSections    map[string]*symbols.Table
	kernelMmapBuildID []byte
}

func newSymbolizer(ks *kallsyms.List, load func() preparedKernel, buildIDs map[string][]byte, debugDir string, kernelMods func() []index.Map) *symbolizer {
	return &symbolizer{
		kallsyms:       ks,
		hasKallsyms:    ks != nil,
		load:           load,
		buildIDs:       buildIDs,
		debugDir:       debugDir,
		files:          make(map[string]*symbols.Table),
		sections:       make(map[string]*symbols.Table),
		sectionFiles:   make(map[string]string),
		bpf:            make(map[index.Map]*symbols.Table),
		kernelMods:     kernelMods,
		modLoaded:      make(map[string]bool),
		moduleTables:   make(map[string]*symbols.Table),
		moduleText:     make(map[string]*symbols.KernelSection),
		kernelSections: make(map[string]*symbols.Table),
	}
}

// kernelSyms waits for the background kallsyms load, if any, and
// returns the kallsyms symbols (nil: none).
func (s *symbolizer) kernelSyms() *kallsyms.List {
	if s.load != nil {
		p := s.load()
		s.kallsyms, s.pre, s.preDelta, s.err = p.syms, p.kt, p.delta, p.err
		s.load = nil
		s.hasKallsyms = s.kallsyms != nil
	}
	return s.kallsyms
}

// kernelDelta is kallsyms__delta: the reference symbol's address in
// kallsyms minus the recording's, 0 when the recording has none; ok is
// false when kallsyms lacks the symbol, which makes perf's kallsyms load
// fail whole.
func (s *symbolizer) kernelDelta(ks *kallsyms.List) (delta uint64, ok bool) {
	if s.m == nil || s.m.RefRelocName == "" {
		return 0, true
	}
	if r := &s.ref; !r.known || r.name != s.m.RefRelocName {
		r.addr, r.ok = ks.FunctionStart(s.m.RefRelocName)
		r.name, r.known = s.m.RefRelocName, true
	}
	return s.ref.addr - s.m.RefRelocAddr, s.ref.ok
}

// kernelTables loads the kallsyms tables (dso__load_kallsyms +
// maps__split_kallsyms) with the module maps present at first use.
func (s *symbolizer) kernelTables() *symbols.KernelTables {
	if s.kernel != nil {
		return s.kernel // a vmlinux's, or kallsyms' made before
	}
	ks := s.kernelSyms()
	if ks == nil {
		return s.kernel
	}
	mods := s.kernelMods()
	delta, ok := s.kernelDelta(ks)
	switch {
	case !ok:
		s.kernel = &symbols.KernelTables{Kernel: new(symbols.Table), Modules: map[string]*symbols.Table{}}
	case s.pre != nil && delta == s.preDelta && len(mods) == 0 && len(s.modLoaded) == 0:
		s.kernel = s.pre // built in the background: the split needs no module maps
	default:
		s.kernel = symbols.KernelFrom(ks, mods, symbols.KernelOptions{
			Loaded: func(mod string) bool { return s.modLoaded[mod] }, Delta: delta})
	}
	return s.kernel
}

// loadKernel is the machine's OnKernelLoad hook, perf's
// dso__load_kernel_sym: a vmlinux when one is found (loadVmlinux), else
// the kallsyms file with kcore beside it when perf
// would use it (the kernel maps are rebuilt from its segments), else the
// kallsyms split and the kernel map's range fixed up to its symbols
// (map__fixup_start/end).
func (s *symbolizer) loadKernel(m *machine.Machine) {
	s.kernelLoaded = true
	if s.loadVmlinux(m) {
		return
	}
	ks := s.kernelSyms()
	if ks == nil {
		return
	}
	if _, ok := s.kernelDelta(ks); ok && s.kcore != nil {
		if k := s.kcore(); k != nil {
			t, note, err := k.load(m, ks)
			if err != nil && s.err == nil {
				s.err = err
			}
			if t != nil {
				s.kcoreTable, s.kcoreUsed = t, k.Source
				return
			}
			s.kcoreNote = note
		}
	}
	kt := s.kernelTables()
	if kt != nil && kt.Kernel.Len() > 0 {
		m.FixupKernel(kt.Start, kt.End)
	}
	if s.kernel != nil {
		// Every later lookup goes to the tables: the symbols (and the
		// list holding them, a few MB) can go.
		s.kallsyms, s.pre = nil, nil
	}
}

// name returns the symbol name at ip in map m, or symbols.Unknown.
func (s *symbolizer) name(m index.Map, ip uint64) string {
	if sym, ok := s.symbol(m, ip); ok {
		return sym.Name
	}
	return symbols.Unknown
}

// symbol returns the symbol at ip in map m.
func (s *symbolizer) symbol(m index.Map, ip uint64) (symbols.Symbol, bool) {
	t, _ := s.table(m)
	i := s.findIn(m, t, m.MapIP(ip))
	if i < 0 {
		return symbols.Symbol{}, false
	}
	return t.Symbol(i), true
}

// table returns the symbol table of map m (look up m.MapIP(ip)), loading
// it as perf would at this point of the recording, and whether it is
// final: the kernel's and modules' tables change when the kernel loads.
func (s *symbolizer) table(m index.Map) (t *symbols.Table, final bool) {
	switch m.Kind {
	case index.KindKernel, index.KindKcore:
		switch {
		case s.kcoreTable != nil:
			t = s.kcoreTable
		default:
			if kt := s.kernelTables(); kt != nil {
				t = kt.Kernel
			}
		}
		return t, s.kernelLoaded
	case index.KindModule:
		if t, ok := s.moduleTables[m.DSO]; ok {
			return s.fileModuleTable(m.DSO, t)
		}
		if s.kernelLoaded {
			if kt := s.kernelTables(); kt != nil {
				t = kt.Module(m.DSO)
			}
		}
		return t, s.kernelLoaded
	case index.KindBPFProg, index.KindBPFImage, index.KindOOL:
		t = s.bpf[m]
		if t == nil {
			t = symbols.BPF(m)
			s.bpf[m] = t
		}
	case index.KindUser, index.KindAnon:
		switch {
		case s.noFiles:
		case strings.HasPrefix(m.DSO, machine.PerfMapPrefix):
			t = s.perfMap(m.DSO)
		case m.Kind == index.KindUser:
			if t = s.file(m.DSO); t.LoadFailed() && !s.failedSeen[m.DSO] {
				// map__load fails the lookup that loads such a
				// table: none for this one, and not final, so
				// that no cache keeps the answer.
				if s.failedSeen == nil {
					s.failedSeen = make(map[string]bool)
				}
				s.failedSeen[m.DSO] = true
				return nil, false
			}
		}
	case index.KindModuleSection:
		if !s.noFiles {
			t = s.section(m.DSO)
		}
	case index.KindKernelSection:
		t = s.kernelSections[m.DSO]
	}
	return t, true
}

// file returns the symbol table of a user DSO, found where perf 6.1's
// dso__load looks: the build-id cache, then the debug files, then the
// path itself; a candidate whose build id differs from the recorded one
// is skipped (symsrc__init). Nothing found: an empty table.
func (s *symbolizer) file(dso string) *symbols.Table {
	if s.lastFile.t != nil && s.lastFile.dso == dso {
		return s.lastFile.t // consecutive samples tend to share a DSO
	}
	if t, ok := s.files[dso]; ok {
		s.lastFile.dso, s.lastFile.t = dso, t
		return t
	}
	id := s.buildIDs[dso]
	t, ok := s.prefetch.table(dso, id)
	if !ok {
		t = loadFileTable(s.debugDir, s.symfs, dso, id)
	}
	if t == nil && dso == machine.VDSOName && s.symfs == "" && (len(id) == 0 || s.vdso != nil) {
		// perf reads its own vdso only when the recording names none by
		// build id: a build-id entry for [vdso] makes a DSO of that name
		// first (__event_process_build_id), which machine__findnew_vdso
		// then finds, and no file but the build-id cache's holds it.
		// An image given with Options.VDSO is read if its build id
		// matches.
		t = vdsoTable(s.vdsoImage(), id)
	}
	s.files[dso] = t
	s.lastFile.dso, s.lastFile.t = dso, t
	return t
}

// perfMap returns the symbols of a /tmp/perf-PID.map file; none when it
// cannot be read.
func (s *symbolizer) perfMap(dso string) *symbols.Table {
	if t, ok := s.files[dso]; ok {
		return t
	}
	var t *symbols.Table
	if f, err := regular.Open(dso); err == nil {
		t, _ = symbols.PerfMap(f)
		f.Close()
	}
	s.files[dso] = t
	return t
}

// loadFileTable loads the symbol table of a user DSO with build id id
// from the files perf 6.1's dso__load would take it from (symbolFiles);
// nil when there are none or they cannot be read. It reads only files,
// so the prefetch runs it too.
func loadFileTable(debugDir, symfs, dso string, id []byte) *symbols.Table {
	runtime, syms, ok := symbolFiles(debugDir, symfs, dso, id)
	if !ok {
		return nil
	}
	if syms == runtime {
		syms = ""
	}
	t, err := symbols.ELFWithDebug(runtime, syms)
	if err != nil {
		return nil
	}
	return t
}

// dsoBuildID is the build id dso__load checks a DSO's files against:
// the recorded one, else the one read from the file below the symfs
// (filename__read_build_id, compression as symbols.FileBuildID takes it)
// when the file exists at its own path: perf tests is_regular_file on
// the DSO's long name, without the symfs, before it reads.
func dsoBuildID(id []byte, symfs, file, compression string) []byte {
	if len(id) == 0 && regular.Is(file) {
		return symbols.FileBuildID(symfs+file, compression)
	}
	return id
}

// symbolFiles is symbols.SymbolSources over the DSO's candidates
// (symbols.SymbolCandidates), with perf's build-id cache at debugDir
// ("" for none; a [vdso] DSO's entry is "vdso" there): runtime and syms,
// the file that gives the symbols, which perf calls the DSO's symbol
// source (dso->symsrc_filename, which its inline lookups read).
func symbolFiles(debugDir, symfs, dso string, id []byte) (runtime, syms string, ok bool) {
	id = dsoBuildID(id, symfs, dso, "")
	var cache func([]byte, string) string
	if debugDir != "" {
		cache = func(id []byte, entry string) string {
			if dso == machine.VDSOName {
				entry = "vdso" // build_id_cache__basename: is_vdso first
			}
			return buildIDCacheEntry(debugDir, id, entry)
		}
	}
	return symbols.SymbolSources(symbols.SymbolCandidates(dso, symfs, id, cache), id)
}

// dsoCandidates lists the files perf reads a DSO's contents from
// (dso__data_fd's try_to_open_dso: the build-id cache's entry, then the
// file itself), with perf's build-id cache at debugDir
// (buildIDCacheEntry) and its --symfs at symfs.
func dsoCandidates(debugDir, symfs, dso string, id []byte) []string {
	var out []string
	if len(id) > 0 && debugDir != "" {
		base := "elf"
		if dso == "[vdso]" {
			base = "vdso"
		}
		out = append(out, buildIDCacheEntry(debugDir, id, base))
	}
	if strings.HasPrefix(dso, "/") {
		out = append(out, symfs+dso) // __symbol__join_symfs
	}
	return out
}

// buildIDCacheEntry is __dso__build_id_filename: the file perf's build-id
// cache at debugDir keeps for build id id, .build-id/xx/ID/base (base
// "elf", "vdso", "debug" or "kallsyms"), or .build-id/xx/ID itself when
// that is a regular file ("old style build_id cache").
func buildIDCacheEntry(debugDir string, id []byte, base string) string {
	h := hex.EncodeToString(id)
	link := filepath.Join(debugDir, ".build-id", h[:2], h[2:])
	if regular.Is(link) {
		return link
	}
	return filepath.Join(link, base)
}

// section returns the symbols of a module section map ("[mod].sec"), read
// from the module file its KMOD_SEC_MAP record named; none when the file
// is not there.
func (s *symbolizer) section(dso string) *symbols.Table {
	if t, ok := s.sections[dso]; ok {
		return t
	}
	var t *symbols.Table
	if path := s.sectionFiles[dso]; path != "" {
		if i := strings.LastIndexByte(dso, ']'); i >= 0 {
			t, _ = symbols.Section(path, dso[i+1:])
		}
	}
	s.sections[dso] = t
	return t
}
