// Package attrib streams a perf.data file through a machine (package
// machine) and attributes every sample to a map and a symbol exactly as
// perf 6.1's `perf script -F ip,sym,dso` does: events in perf's order
// (ordered_events), kernel samples against the kernel maps, user samples
// against their thread's maps, symbols from kallsyms and ELF files.
//
// Every sample gets a dense ordinal; each map keeps a Roaring bitmap of
// the ordinals that fell in it, each (dso, symbol) a count. Samples with no
// map are counted as [unknown], never dropped. Decoding runs in its own
// goroutine, ahead of ordering and resolving.
package attrib

import (
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/perfstat"
	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/ingest/unwind"
	"github.com/kmapindex/kmapindex/internal/cacheline"
)

// Options configure a run.
type Options struct {
	// Impl is the map implementation (default mapset.BTree).
	Impl mapset.Impl
	// Kallsyms are the kernel symbols; nil resolves kernel samples to
	// maps but not to symbols.
	Kallsyms []kallsyms.Symbol
	// LoadKallsyms, if set, supplies Kallsyms instead: Run calls it once,
	// in the background from the recording's first kernel sample (from
	// its start when its header lists the kernel among the DSOs its
	// samples hit and it holds 4 MiB of data or more, or is a pipe), so
	// that reading kallsyms overlaps decoding, and never for a recording
	// without one (see LoadKallsymsFile). Its error ends the run.
	LoadKallsyms func() (*kallsyms.List, error)
	// KallsymsFile names the file Kallsyms or LoadKallsyms come from.
	// When its base name is "kallsyms", perf also tries the "kcore" and
	// "modules" files beside it when it loads the kernel, and so does Run
	// (KcoreBeside), unless Kcore is set.
	KallsymsFile string
	// ChooseKallsyms, if set, replaces LoadKallsyms and KallsymsFile: Run
	// asks it for them when it would start the load, with the build id
	// the kernel's own MMAP2 record carried, if the decoder read one by
	// then (perf record --buildid-mmap writes no build-id table). perf
	// 6.1 gives that id to the kernel's DSO
	// (machine__process_kernel_mmap_event), and the DSO's build id
	// decides which kallsyms perf reads (dso__find_kallsyms). A nil load
	// means no kernel symbols. A header that names the kernel among the
	// DSOs hit starts the load before any record is read: the id is nil
	// then, and the header's build id decides.
	ChooseKallsyms func(kernelMmapBuildID []byte) (load func() (*kallsyms.List, error), file string)
	// Kcore, if set, supplies the kcore segments and modules list perf
	// would read beside the kallsyms file (a corpus has them parsed).
	Kcore func() *Kcore
	// Vmlinux is perf's -k/--vmlinux: the kernel's symbols come from
	// this vmlinux file and from nothing else, none when it cannot be used
	// (symbols.ReadVmlinux says when). It overrides VmlinuxPath and the
	// kallsyms options.
	Vmlinux string
	// VmlinuxPath, when not nil, makes Run look for a vmlinux before
	// kallsyms when it loads the kernel, as perf's dso__load_kernel_sym
	// does when no kallsyms file was named: the build-id cache's
	// DebugDir/.build-id/xx/ID/elf, then these files in order (perf's
	// vmlinux_path, see VmlinuxPath), then the cache's ID/kallsyms
	// entry. The first usable one (symbols.ReadVmlinux, with the kernel
	// DSO's build id) gives the kernel's symbols, and kallsyms and kcore
	// are then not used for it; module maps then have no symbols, their
	// .ko files not being read.
	VmlinuxPath []string
	// FetchInsn makes Run load the kernel at the first sample, as perf
	// script does on x86 hosts for recordings of the host's architecture
	// (or pipe mode): it fetches each sample's instruction, and the first
	// fetch asks for the kernel start, which loads the kernel map
	// (arch_fetch_insn → machine__kernel_ip → machine__get_kernel_start).
	// perf report does not.
	FetchInsn bool
	// CacheDir is where the debug sections inflated for inline frames
	// are kept for later runs (unwind.SectionCache): "" for kmapindex's
	// directory in the user's cache directory (os.UserCacheDir), "-" for
	// none.
	CacheDir string
	// DebugDir is perf's build-id cache, where perf record copies the
	// DSOs it saw (default $HOME/.debug; "-" for none).
	DebugDir string
	// NoFiles leaves user-space and module-section symbols unresolved
	// instead of reading DSO files (maps and kernel symbols still work).
	NoFiles bool
	// Symfs is perf's --symfs: DSO files are looked for below this
	// directory (a DSO /usr/lib/x.so at Symfs/usr/lib/x.so), for their
	// symbols and for unwinding; perf's own vdso copy is then not found
	// either. "" reads them where the recording names them.
	Symfs string
	// VDSO is the vdso image a recording's [vdso] map is symbolized and
	// unwound with: when the recording names no vdso by build id, or
	// (symbols only) names this image's; nil: this process's own, as perf
	// uses its own, when the recording names none (see OwnVDSO).
	VDSO []byte
	// Script, if set, receives one entry per sample as perf script
	// -F ip,sym,dso prints it (with callchains unless HideCallchain).
	Script        io.Writer
	HideCallchain bool
	// Progress, if set, is called with the file offset every so often.
	Progress func(offset int64)
	// KmodSecType is the record type of PERF_RECORD_KMOD_SEC_MAP (the
	// proposal's 83 when 0; see ingest/kmodsec). Its section maps enter
	// the kernel maps, so samples in a module's non-.text sections
	// resolve to "[mod]section" and its symbols.
	KmodSecType uint32
	// BranchMode counts, besides the samples, every branch-stack entry
	// by its target (Result.Branches), as perf report does by default for
	// recordings with branch stacks (sort__mode SORT_MODE__BRANCH,
	// hist_iter_branch); BranchModeDefault says when. Ignored with Script.
	BranchMode bool
	// Children also accumulates each sample's period into every (dso,
	// symbol) of its callchain (Result.Children), as perf report
	// --children does. Ignored with Script or BranchMode.
	Children bool
	// Stacks collects every distinct stack (Result.Stacks) with its
	// thread, command name and CPU, for pprof and folded output.
	Stacks bool
	// NoCounts leaves the per-map and per-symbol counts (Result.ByMap,
	// ByMapSym, BySym, ByEvent) empty, for output that needs none: script
	// lines, stacks, a table by sort keys (Result.Rows). Keeping them is
	// about a quarter of attribution.
	NoCounts bool
	// NoSampleSets leaves Result.ByMap empty: its sample sets are what
	// the JSON form's per-map digests need, and adding every sample to
	// one costs as much as counting it.
	NoSampleSets bool
	// NoMapSymCounts leaves Result.ByMapSym empty: BySym holds the same
	// counts by (DSO, symbol), which the tables and JSON read, and the
	// map by (map, symbol) was 8 MB of a 1.3 M-sample children table's
	// peak.
	NoMapSymCounts bool
	// KernelLoaded, if set, is called (on Run's goroutine) once the
	// kernel's symbols are loaded: most of a run's fixed memory is in by
	// then, and what reading kallsyms took is garbage (kbench collects it
	// there, so that the allocations after it reuse that memory).
	KernelLoaded func()
	// SortKeys, if set, also counts the samples by these perf report
	// --sort keys (ParseSortKeys) into Result.Rows; a Filter does too,
	// by dso,sym when SortKeys is empty.
	SortKeys []string
	// Filter selects samples as perf's filter options do (see Filter);
	// nil selects all.
	Filter *Filter
}

// ChildrenApply reports whether perf report --children accumulates
// callchains for r (report__setup_sample_type): only in file mode (a
// pipe's attrs are not known when perf decides), and only when an event
// samples callchains or the header has AUX area data.
func ChildrenApply(r *perfdata.Reader, pipe bool) bool {
	if pipe {
		return false
	}
	if r.Features().Has(perfdata.FeatAuxtrace) {
		return true
	}
	for _, a := range r.Attrs() {
		if a.SampleType&perfdata.SampleFormatCallchain != 0 {
			return true
		}
	}
	return false
}

// BranchModeDefault reports whether perf report would use branch mode
// for r: its header has the branch-stack feature and no event samples
// the user stack (cmd_report's has_br_stack). A pipe has no features
// when perf decides, so it never does.
func BranchModeDefault(r *perfdata.Reader) bool {
	return r.Features().Has(perfdata.FeatBranchStack) && !r.HasUserStacks()
}

// Key names what a sample was attributed to, as perf report's dso,sym
// sort keys do: a DSO and a symbol (told apart by its start, so two
// symbols of one name are two keys), or for a sample without a symbol the
// address perf report shows instead (the map-relative address, or the IP
// when there is no map).
//
// Its fields are in the order that packs them tightest (56 bytes, 64
// with the booleans after the names): tables hold a key a row.
type Key struct {
	DSO, Sym string
	Addr     uint64 // the symbol's start, or the address when Sym is "[unknown]"
	Event    int    // index into Result.Events
	// dup numbers the rows of one key perf's tree of a children table
	// keeps apart (children.replay), from 0.
	dup    int32
	Kernel bool // resolved with a kernel cpumode
	// Hyper is a sample without a map taken in neither a kernel nor a
	// user cpumode (hypervisor, guest, unknown): perf's level "H".
	Hyper bool
}

// MapSym is a sample's map (the zero Map when it had none), its symbol
// (or unresolved address, as in Key) and whether it was resolved with a
// kernel cpumode.
type MapSym struct {
	Map    index.Map
	Sym    string
	Kernel bool
	Hyper  bool   // as in Key
	Addr   uint64 // as in Key
	Event  int    // as in Key
}

// Key returns the (dso, symbol) key of ms.
func (ms MapSym) Key() Key {
	dso := ms.Map.DSO
	if ms.Map == (index.Map{}) {
		dso = symbols.Unknown
	}
	return Key{DSO: dso, Sym: ms.Sym, Kernel: ms.Kernel, Hyper: ms.Hyper, Addr: ms.Addr, Event: ms.Event}
}

// Counts are a number of samples and the sum of their periods (what perf
// report's overhead weighs).
type Counts struct {
	Samples, Period uint64
}

func (c *Counts) add(o Counts) { c.Samples += o.Samples; c.Period += o.Period }

// Result is the attribution of one recording.
type Result struct {
	// hidden are the table rows perf hides: those a filtered sample
	// made (a guest one, see attributor.sample); counted in the totals.
	hidden map[Key]bool
	// objects gives the rows of object symbols (symbols.Symbol.Object)
	// the offset perf report names them with (objectName).
	objects map[Key]objectName

	Samples uint64
	Unknown uint64 // samples with no map
	// ByMap holds the ordinals of the samples that fell in each map, as
	// the map was when the sample was resolved.
	ByMap map[index.Map]*roaring.Bitmap
	// ByMapSym counts samples per (map, symbol); BySym sums them per
	// (dso, symbol). Unresolved parts read "[unknown]".
	ByMapSym map[MapSym]Counts
	BySym    map[Key]Counts
	// Period is the sum of all samples' periods.
	Period uint64
	// Events names the recording's events (its attrs, in order: the
	// EVENT_DESC name, else perf's name for the attr, perfdata.Attr.Name);
	// ByEvent counts each one's samples.
	Events  []string
	ByEvent []Counts
	Stats   perfdata.Stats
	// LostChunks counts PERF_RECORD_LOST records and LostEvents the events
	// they say were lost; LostSamples sums PERF_RECORD_LOST_SAMPLES.
	LostChunks, LostEvents, LostSamples uint64
	// UnknownRecords counts the records of types perf 6.1 does not know
	// in the kernel's range (0, and 22 to 63: past
	// PERF_RECORD_AUX_OUTPUT_HW_ID), other than KMOD_SEC_MAP records. perf
	// counts them in events_stats.nr_unknown_events (machines__deliver_event)
	// and warns "Found N unknown events!" (perf_session__warn_about_errors),
	// but its delivery of the first one fails, which ends perf report and
	// perf script there; Run skips them and attributes every sample.
	UnknownRecords uint64
	// UnknownUserRecords counts the records of user types past perf 6.1's
	// last (PERF_RECORD_FINISHED_INIT, 82, and 83, COMPRESSED2, which
	// kbench reads), other than KMOD_SEC_MAP records, such as simpleperf's
	// own; UnknownUserTypes lists their types in order. perf 6.1 fails at
	// the first ("failed to process type") and reports nothing; Run skips
	// them.
	UnknownUserRecords uint64
	UnknownUserTypes   []perfdata.RecordType
	// UnknownIDs counts the PERF_SAMPLE_READ counters whose id no event
	// of the recording has (events_stats.nr_unknown_id): perf delivers
	// no sample for them.
	UnknownIDs uint64
	// Unordered counts the events queued with a time before that of an
	// event delivered already (ordered_events' nr_unordered_events,
	// delivered with the next flush as perf delivers them); 0 when an
	// event writes backward, as perf then does not warn of them.
	Unordered uint64
	// Branches is nil unless Options.BranchMode: it counts branch-stack
	// entries by target, each with period 1, as perf report's branch mode
	// does. A key's DSO is the target DSO's short name (perf's rows are
	// told apart by it) and Kernel the level of the first sample that
	// reached it; an unresolved target's address is the raw one.
	// BranchEvents sums them per event.
	Branches     map[Key]Counts
	BranchEvents []Counts
	// children is nil unless Options.Children: the Children column
	// (Result.Children), a key each. A list, not a map: a gcc build's
	// -a -g recording has 514 k, and hashing them into a map took 0.2 s
	// of its end and 85 MB, for a table that only walks them.
	children keyChunks
	// childSelf, when set, is the children table's Self column, keyed
	// as Children (accumulator.replay, or selfColumn when a tree of
	// far-apart addresses moved some to rows of their own); else BySym is.
	childSelf map[Key]Counts
	// noMapRanks, when set, orders the rows perf's output sort finds
	// equal as its tree of entries has them: those of addresses outside
	// every map (accumulator.finishTrees) and the rows of one key its
	// tree kept apart (replayer.result).
	noMapRanks *rowRanks
	// Rows is the table by Options.SortKeys (or with Options.Filter);
	// nil without either.
	Rows *Rows
	// Stacks are the distinct stacks of the samples (Options.Stacks),
	// in first-seen order.
	Stacks []Stack
	// SampleTypes are the events' sample types (what their samples
	// record), in event order.
	SampleTypes []perfdata.SampleFormat
	// PrintsPeriod says, per event, whether perf script's default output
	// prints its samples' period: every event but a tracepoint (whose
	// fields are its raw data instead), whether or not the samples
	// record one (the attr's sample_period then, as perf's
	// evsel__parse_sample gives them).
	PrintsPeriod []bool
	// BuildIDs are the recording's build ids by DSO, in hex.
	BuildIDs map[string]string
	// Groups are the recording's event groups (GROUP_DESC), which the
	// table shows as perf's group view.
	Groups []perfdata.GroupDesc
	// Warnings are records skipped as perf skips them (at most
	// maxWarnings, then a count of the rest).
	Warnings []string
	// KernelSymbols says where the kernel's symbols came from ("kcore …",
	// "kallsyms …" with the reason kcore was not used); "" when the
	// kernel was never loaded.
	KernelSymbols string
}

// LoadKallsymsFile returns a loader for Options.LoadKallsyms that reads
// the kallsyms file when called (Run calls it in the background, see
// Options.LoadKallsyms). A file without symbols gives none (a
// nil list); one whose addresses are all 0 (kptr_restrict) is an error.
func LoadKallsymsFile(file string) func() (*kallsyms.List, error) {
	return func() (*kallsyms.List, error) {
		ks, err := kallsyms.ReadListFile(file)
		switch {
		case err != nil:
			return nil, err
		case ks.Restricted():
			return nil, fmt.Errorf("%s: every address is 0 (kptr_restrict)", file)
		case ks.Len() == 0:
			return nil, nil
		}
		return ks, nil
	}
}

// kallsymsChoice is where a Run's kernel symbols come from: Options'
// ChooseKallsyms's answer when set, else its LoadKallsyms and
// KallsymsFile. file is written by the load (before prepareKernel's
// read ends, which whoever reads it waits for) when the choice is late.
type kallsymsChoice struct {
	choose func([]byte) (func() (*kallsyms.List, error), string)
	load   func() (*kallsyms.List, error)
	file   string
}

func newKallsymsChoice(opts Options) *kallsymsChoice {
	return &kallsymsChoice{choose: opts.ChooseKallsyms, load: opts.LoadKallsyms, file: opts.KallsymsFile}
}

// loader returns prepareKernel's load: nil when there is nothing to load.
func (c *kallsymsChoice) loader() func(mmapBuildID []byte) (*kallsyms.List, error) {
	switch {
	case c.choose != nil:
		return func(mmapBuildID []byte) (*kallsyms.List, error) {
			load, file := c.choose(mmapBuildID)
			c.file = file
			if load == nil {
				return nil, nil
			}
			return load()
		}
	case c.load != nil:
		return func([]byte) (*kallsyms.List, error) { return c.load() }
	}
	return nil
}

// kcoreBeside is KcoreBeside of the kallsyms file, known by the time the
// kernel loads when the choice is late.
func (c *kallsymsChoice) kcoreBeside() func() *Kcore {
	if c.choose == nil {
		return KcoreBeside(c.file)
	}
	return func() *Kcore {
		if k := KcoreBeside(c.file); k != nil {
			return k()
		}
		return nil
	}
}

// childrenTable reports whether a run with opts makes a children table:
// Children asks for one, and neither a script nor branch mode is made.
func (opts *Options) childrenTable() bool {
	return opts.Children && opts.Script == nil && !opts.BranchMode
}

// wantsChains reports whether a run with opts reads the samples'
// callchains, and the user stacks behind them: scripts and stacks unless
// hidden (HideCallchain), and children tables.
func (opts *Options) wantsChains() bool {
	return (opts.Script != nil || opts.Stacks) && !opts.HideCallchain || opts.childrenTable()
}

// UnwindsUserStacks reports whether Run with opts unwinds the user
// stacks of r's samples (perf record --call-graph dwarf: registers and
// stack sampled): the views that read callchains do. Such a run reads
// the binaries' unwind tables and DWARF sections, megabytes for a
// recording of kilobytes.
func UnwindsUserStacks(r *perfdata.Reader, opts Options) bool {
	return opts.wantsChains() && slices.ContainsFunc(r.Attrs(), needsUnwind)
}

// Run reads the recording r and attributes every sample.
func Run(r *perfdata.Reader, opts Options) (*Result, error) {
	if opts.Impl.New == nil {
		opts.Impl = mapset.BTree
	}
	if opts.DebugDir == "" {
		if home, err := os.UserHomeDir(); err == nil {
			opts.DebugDir = filepath.Join(home, ".debug")
		}
	} else if opts.DebugDir == "-" {
		opts.DebugDir = ""
	}
	var sections *unwind.SectionCache
	switch opts.CacheDir {
	case "-":
	case "":
		if dir, err := os.UserCacheDir(); err == nil {
			sections = &unwind.SectionCache{Dir: filepath.Join(dir, "kmapindex", "sections")}
		}
	default:
		sections = &unwind.SectionCache{Dir: opts.CacheDir}
	}
	if err := opts.Filter.checkCPUs(r); err != nil {
		return nil, err
	}
	// perf reads --time once the header is read: a pipe's features,
	// SAMPLE_TIME's among them, come later.
	feat := r.Features()
	filter, err := opts.Filter.withTimes(feat.FirstSampleTime, feat.LastSampleTime)
	if err != nil {
		return nil, err
	}
	opts.Filter = filter
	m := machine.New(opts.Impl)
	a := &attributor{
		opts:     opts,
		m:        m,
		res:      &Result{ByMap: make(map[index.Map]*roaring.Bitmap), ByMapSym: make(map[MapSym]Counts), BySym: make(map[Key]Counts)},
		cnt:      newCounter(),
		execs:    execs{},
		sections: sections,
	}
	defer a.closeUnwind() // the binaries DWARF callchains opened (dwarf.go)
	a.mapped, a.reader = r.MappedData(), r
	a.dataSize = r.DataSize() // sizes the caches: a pipe-mode file's too
	ksChoice := newKallsymsChoice(opts)
	if opts.Vmlinux != "" {
		ksChoice = &kallsymsChoice{} // perf reads no kallsyms then
	}
	kp := prepareKernel(ksChoice.loader(), func() bool {
		// The kallsyms tables would be thrown away if kcore is used.
		return opts.Kcore != nil || kcoreFileBeside(ksChoice.file)
	})
	if kp.readEarly != nil && readsKallsymsEarly(a.dataSize) && machine.KernelEntry(kernelBuildIDs(r.Features())) >= 0 {
		// perf record lists the DSOs its samples hit: the kernel's
		// symbols will be needed.
		kp.readEarly(nil)
	}
	var ks *kallsyms.List // opts.Kallsyms; nil: none
	if opts.Kallsyms != nil {
		ks = kallsyms.NewList(opts.Kallsyms)
	}
	if kp.loaded != nil {
		// The loader may report through the caller's callbacks: it ends
		// before Run does, whether or not a kernel sample needed it.
		defer kp.loaded()
	}
	// The deliveries in flight hold at most flowLimitFor's bytes.
	deliveries := make(chan delivery, deliveriesQueued)
	flow := newFlowLimit(flowLimitFor(r.Header().Data.Size))
	pools := newOrderPools()
	errc := make(chan error, 1)
	branches := opts.BranchMode && opts.Script == nil
	if branches {
		a.branchLevel = make(map[Key]bool)
		a.res.Branches = make(map[Key]Counts)
	}
	children := opts.childrenTable()
	if opts.Stacks {
		a.stacks = newStacker()
	}
	sortKeys := opts.SortKeys
	if len(sortKeys) == 0 && opts.Filter != nil {
		sortKeys = []string{SortDSO, SortSym}
	}
	switch {
	case len(sortKeys) > 0:
		a.rows = newRowCounter(sortKeys, children)
		a.rows.firstLevel = branches
		a.rows.cache.resize(cacheBits(a.dataSize, rowCacheBits))
		rows := a.rows
		m.OnCommRename = func(e *machine.CommEntry, old string) { rows.cache.renamed(rows, e, old) }
	case children:
		a.acc = newAccumulatorBits(cacheBits(a.dataSize, frameCacheBits))
		defer a.acc.stopTrees() // on errors too
		for _, at := range r.Attrs() {
			if needsUnwind(at) { // inlined frames can come (see replay)
				a.acc.log = &entryLog{}
				a.acc.startReplay()
				break
			}
		}
	}
	if children {
		a.cursor = newChainCursor(r.Attrs())
	}
	m.RegisterIdle() // perf_session__process_events
	wantChains := opts.wantsChains()
	a.countsCached = a.holdsKernel() && opts.NoSampleSets
	a.scriptCached = opts.Script != nil && opts.NoCounts && opts.NoSampleSets && opts.Filter == nil &&
		a.acc == nil && a.rows == nil && a.stacks == nil && a.res.Branches == nil
	if a.holdsKernel() { // hold.go
		a.kernelWaiting = kp.waiting
		if holdKernelForTests != nil {
			a.kernelWaiting = holdKernelForTests
		}
	}
	kmodsecType := opts.KmodSecType
	if kmodsecType == 0 {
		kmodsecType = kmodsec.DefaultType
	}
	var pre *prefetch
	if f := r.Features(); f != nil && !opts.NoFiles {
		names := make([]string, len(f.BuildIDs))
		for i, b := range f.BuildIDs {
			names[i] = b.Filename
		}
		// Inline records only for the unwound frames, which only views
		// with callchains look at (withUserPayload).
		inlines := UnwindsUserStacks(r, opts)
		pre = startPrefetch(names, buildIDMap(f), opts.DebugDir, opts.Symfs, inlines, sections)
		defer pre.stop()
		if prefetchStarted != nil {
			prefetchStarted(pre)
		}
	}
	var lost lostCounts // written by decode, read after errc
	go decode(r, a.mapped, deliveries, pools, flow, errc, decodeConfig{
		progress:    opts.Progress,
		wantChains:  wantChains,
		markChains:  children, // chainVoid's callers: cumulate, cumulateRows
		branches:    branches,
		kmodsecType: kmodsecType,
		lost:        &lost,
		kernelSeen:  kp.start,
		stat:        statCounters(r, opts.Script != nil),
	})

	var buildIDs map[string][]byte
	var runErr error
	// newSym makes the symbolizer: at the first delivery, or at the end
	// for a recording without one.
	newSym := func() *symbolizer {
		s := newSymbolizer(ks, kp.take, buildIDMap(r.Features()), opts.DebugDir, a.m.ModuleMaps)
		s.noFiles, s.symfs, s.vdso = opts.NoFiles, opts.Symfs, opts.VDSO
		s.vmlinuxOnly, s.vmlinuxPath = opts.Vmlinux, opts.VmlinuxPath
		s.prefetch = pre
		return s
	}
	if opts.Script != nil {
		a.out = newScriptOut(opts.Script)
	}
	for d := range deliveries {
		if runErr == nil && len(d.keys) > 0 && a.sym == nil {
			// Build ids come from the features, which file mode has
			// before the first record; HEADER_BUILD_ID records (pipe
			// mode, perf inject -b) add to them as they are read.
			a.sym = newSym()
			buildIDs = a.sym.buildIDs
			a.sym.kcore = opts.Kcore
			if a.sym.kcore == nil {
				a.sym.kcore = ksChoice.kcoreBeside()
			}
			a.sym.m = m
			a.x86_64 = isX86_64(r.Features().Arch)
			m.KernelBuildIDs = kernelBuildIDs(r.Features())
			m.OnModuleLoad = a.sym.loadModuleFile
			m.OnKernelLoad = func(m *machine.Machine) {
				a.sym.loadKernel(m)
				if opts.KernelLoaded != nil {
					opts.KernelLoaded()
				}
			}
		}
		if runErr == nil { // else drain so the decoder ends
			runErr = a.deliverAll(d.keys)
		}
		pools.recycle(d)
		flow.release(d.bytes)
	}
	if runErr == nil && a.held.n > 0 {
		runErr = a.releaseHeld()
	}
	if a.out != nil {
		// Every line is written before Run returns, up to an error.
		if err := a.out.close(); err != nil && runErr == nil {
			runErr = err
		}
	}
	if err := <-errc; err != nil {
		return nil, err
	}
	if runErr != nil {
		return nil, runErr
	}
	if a.sym == nil {
		a.sym = newSym()
	}
	if a.sym.err != nil {
		return nil, fmt.Errorf("attrib: kallsyms: %w", a.sym.err)
	}
	if a.sym.mapsErr != nil {
		return nil, fmt.Errorf("attrib: %w", a.sym.mapsErr)
	}
	// A children table's entries are made into rows on another core
	// while the counts by symbol are summed: they touch nothing those do,
	// and their trees' worker may still be busy (finishTrees). On the
	// -a -g recording the two took 7-13 and 25-35 ms one after the other.
	var accDone chan struct{}
	var accChildren keyChunks
	accRes := &Result{} // what result notes (hidden rows, objects), kept apart until then
	if a.acc != nil {
		accDone = make(chan struct{})
		go func() {
			defer close(accDone)
			// The trees are ranked before the counts are gathered, and
			// let go of with what else only counting read (release):
			// gathered alongside, the gcc build's table held both, and
			// its live heap peaked there (209 MB; 81 MB once let go).
			if rank := a.acc.finishTrees(); rank != nil {
				rank()
			}
			a.acc.release()
			accChildren = a.acc.result(accRes)
		}()
	}

	// BySym holds the counts by (dso, symbol), and ByMapSym (when kept)
	// the same counts by map: both are filled on two cores, one after the
	// other taking 30 ms of a 2.3 M-sample table's end on one. Without
	// ByMapSym, BySym is summed straight from the counter, on two cores
	// (sumBySym): the list of every (map, symbol) count took 3-9 ms of
	// the -a table's end, most of it faulting in its fresh memory.
	nCounts := a.cnt.size()
	var bySym map[Key]Counts
	var byEvent []Counts
	var byMapSym sync.WaitGroup
	if opts.NoMapSymCounts {
		bySym, byEvent = a.cnt.sumBySym(a.res, nCounts)
	} else {
		counts := a.cnt.entries(a.res, nCounts)
		byMapSym.Go(func() {
			m := make(map[MapSym]Counts, len(counts))
			for _, x := range counts {
				c := m[x.ms]
				c.add(x.c)
				m[x.ms] = c
			}
			a.res.ByMapSym = m
		})
		sums := symSums{bySym: make(map[Key]Counts, nCounts)}
		for i := range counts {
			sums.add(&counts[i].ms, counts[i].c)
		}
		bySym, byEvent = sums.bySym, sums.byEvent
	}
	a.res.BySym = bySym
	a.res.Events = eventNames(r)
	for len(byEvent) > len(a.res.Events) {
		a.res.Events = append(a.res.Events, fmt.Sprintf("event %d", len(a.res.Events)))
	}
	if a.rows != nil { // whose events are counted without ByMapSym (NoCounts)
		for len(a.rows.totals) > len(a.res.Events) {
			a.res.Events = append(a.res.Events, fmt.Sprintf("event %d", len(a.res.Events)))
		}
	}
	a.res.ByEvent = make([]Counts, len(a.res.Events))
	copy(a.res.ByEvent, byEvent)
	byMapSym.Wait()
	if a.res.Branches != nil {
		a.res.BranchEvents = make([]Counts, len(a.res.Events))
		for k, c := range a.res.Branches {
			for k.Event >= len(a.res.BranchEvents) {
				a.res.BranchEvents = append(a.res.BranchEvents, Counts{})
			}
			a.res.BranchEvents[k.Event].add(c)
		}
	}
	if a.acc != nil {
		// The entries hold both columns: the hidden ones are the
		// accumulator's, whichever of a sample or a callchain made them.
		<-accDone
		a.res.children, a.res.hidden, a.res.objects = accChildren, accRes.hidden, accRes.objects
		a.res.childSelf = a.acc.selfColumn(a.res.BySym)
		a.res.noMapRanks = a.acc.ranks
		if children, self, ranks, objects, ok := a.acc.replay(); ok {
			// The replay's rows are perf's entries, and their names
			// the entries merged into each.
			a.res.children = keyChunks{}
			for k, c := range children {
				a.res.children.add(keyCounts{k, c})
			}
			a.res.childSelf, a.res.noMapRanks, a.res.objects = self, ranks, objects
		}
	}
	if a.stacks != nil {
		a.res.Stacks = a.stacks.stacks
	}
	a.res.Groups = r.Features().Groups
	if a.rows != nil {
		a.res.Rows = a.rows.result(sortKeys, opts.Filter, a.res.eventGroups())
	}
	for _, at := range r.Attrs() {
		a.res.SampleTypes = append(a.res.SampleTypes, at.SampleType)
		a.res.PrintsPeriod = append(a.res.PrintsPeriod, at.Type != perfTypeTracepoint)
	}
	a.res.BuildIDs = make(map[string]string, len(buildIDs))
	for dso, id := range buildIDs {
		a.res.BuildIDs[dso] = hex.EncodeToString(id)
	}
	a.res.Stats = r.Stats()
	if st := a.res.Stats; st.CutShort != 0 {
		a.warn("unexpected end of event stream: the %d-byte record at file offset %#x is cut short; the samples before it are reported, as perf does", st.CutShort, st.CutShortAt)
	}
	a.res.LostChunks, a.res.LostEvents, a.res.LostSamples = lost.chunks, lost.events, lost.samples
	a.res.Unordered = lost.unordered
	if slices.ContainsFunc(r.Attrs(), func(at *perfdata.Attr) bool { return at.Flags&perfdata.AttrWriteBackward != 0 }) {
		a.res.Unordered = 0 // perf_session__warn_order does not warn then
	}
	for t, n := range a.res.Stats.ByType {
		switch {
		case uint32(t) == kmodsecType:
		case t == 0 || t > perfdata.RecordAuxOutputHWID && t < perfdata.RecordUserTypeStart:
			a.res.UnknownRecords += n
		case t > perfdata.RecordCompressed2:
			a.res.UnknownUserRecords += n
			a.res.UnknownUserTypes = append(a.res.UnknownUserTypes, t)
		}
	}
	slices.Sort(a.res.UnknownUserTypes)
	if a.sym.vmlinuxNote != "" {
		a.warn("vmlinux %s", a.sym.vmlinuxNote)
	}
	switch {
	case a.sym.vmlinuxUsed != "":
		a.res.KernelSymbols = "vmlinux " + a.sym.vmlinuxUsed
	case a.sym.kcoreTable != nil:
		a.res.KernelSymbols = "kcore " + a.sym.kcoreUsed + " with kallsyms " + ksChoice.file
	case a.sym.hasKallsyms && a.sym.kcoreNote != "":
		a.res.KernelSymbols = "kallsyms " + ksChoice.file + " (kcore not used: " + a.sym.kcoreNote + ")"
	case a.sym.hasKallsyms:
		a.res.KernelSymbols = "kallsyms " + ksChoice.file
	}
	return a.res, nil
}

// kernelHint is what the decoder knew of the kernel's maps when it
// started the kallsyms load: whether module maps came (or, noTables,
// whether the load was asked for by the symbolizer itself), and the
// reference symbol the kernel's map records (machine.RefReloc).
type kernelHint struct {
	noTables bool
	refName  string
	refAddr  uint64
	buildID  []byte // the kernel MMAP2's (Options.ChooseKallsyms)
}

// preparedKernel is the background's work: the kallsyms list, the
// kernel symbol tables for a machine without module maps, made with
// delta (nil when the hint said modules, or the reference symbol is not
// in kallsyms), and the load's error.
type preparedKernel struct {
	syms  *kallsyms.List
	kt    *symbols.KernelTables
	delta uint64
	err   error
}

// earlyKallsymsMinData is the least data section (4 MiB) for which Run
// reads the kernel's symbols from the start when the build-id header
// lists the kernel, rather than at the first kernel sample. perf record
// lists the kernel in recordings with no kernel sample too (cycles:u),
// where perf never loads its symbols; below this size decoding is over
// in a few milliseconds, so that reading early gained nothing there and
// held the kallsyms list for nothing: a 13-sample user-only recording's
// table peaked at 13.2 MB (perf report 13.1 MB), 7.7 MB without it.
const earlyKallsymsMinData = 4 << 20

// readsKallsymsEarly reports whether a recording of dataSize bytes of
// data (0: not known, as in a pipe) has its kallsyms read from the start.
func readsKallsymsEarly(dataSize uint64) bool {
	return dataSize == 0 || dataSize >= earlyKallsymsMinData
}

// kernelPrep is the kernel's preparation in the background
// (prepareKernel); its functions are all nil when there is nothing to
// load.
type kernelPrep struct {
	// start runs the load, if not begun, and the tables after it, once:
	// at the recording's first kernel sample in a kernel map (a
	// recording of user space alone never reads kallsyms, which took 8
	// MB), told what the decoder knew then.
	start func(kernelHint)
	// readEarly starts the load alone, before the hint: when the
	// recording's header says its samples hit the kernel (and it is
	// large: readsKallsymsEarly), reading kallsyms (40 ms of a kernel's
	// time here) need not wait for the decoder to reach the first
	// kernel sample, 10 ms of synthesized records into a system-wide
	// recording.
	readEarly func(mmapBuildID []byte)
	// take waits for the load and the tables and hands them over,
	// starting the load if need be: it may be called once (the
	// symbolizer keeps them, and drops the kallsyms list once it has its
	// tables).
	take func() preparedKernel
	// waiting reports whether start was called and what it began is
	// not ready: a kernel sample in a kernel map would wait for it
	// (attributor.hold). Before start, such samples find no kernel map
	// to load.
	waiting func() bool
	// loaded waits for the background work, if begun, to end; after it,
	// start does nothing.
	loaded func()
}

// prepareKernel prepares the kernel's symbols with load in the
// background: when the hint says there are no module maps and
// kcoreLikely (asked once the kallsyms file is known) says no kcore sits
// beside it, it builds the kernel symbol tables there too, relocated by
// the hint's reference symbol, so that both overlap decoding.
func prepareKernel(load func(mmapBuildID []byte) (*kallsyms.List, error), kcoreLikely func() bool) kernelPrep {
	if load == nil {
		return kernelPrep{}
	}
	// The load, once: its list and error are written before read closes.
	var readOnce sync.Once
	var syms *kallsyms.List
	var readErr error
	read := make(chan struct{})
	var state atomic.Int32 // 0: not started, 1: started, 2: the tables are ready
	readEarly := func(mmapBuildID []byte) {
		readOnce.Do(func() {
			go func() {
				defer close(read)
				syms, readErr = load(mmapBuildID)
			}()
		})
	}
	c := make(chan preparedKernel, 1)
	done := make(chan struct{})
	var once sync.Once
	start := func(h kernelHint) {
		once.Do(func() {
			state.Store(1)
			readEarly(h.buildID)
			go func() {
				defer close(done)
				<-read
				p := preparedKernel{syms: syms, err: readErr}
				syms = nil // the symbolizer's, which drops it once it has its tables
				build := p.err == nil && p.syms != nil && !h.noTables && !kcoreLikely()
				if build && h.refName != "" {
					addr, ok := p.syms.FunctionStart(h.refName)
					if build = ok; ok {
						p.delta = addr - h.refAddr
					}
				}
				if build {
					p.kt = symbols.KernelFrom(p.syms, nil, symbols.KernelOptions{Delta: p.delta})
				}
				state.Store(2) // before the send: after take, not waiting
				c <- p
			}()
		})
	}
	return kernelPrep{
		start:     start,
		readEarly: readEarly,
		take: func() preparedKernel {
			start(kernelHint{noTables: true})
			return <-c
		},
		waiting: func() bool { return state.Load() == 1 },
		loaded: func() {
			once.Do(func() { close(done) }) // never started: never will
			<-done
			readOnce.Do(func() { close(read) }) // never read: never will
			<-read
		},
	}
}

// deliverAll delivers the events of one delivery, up to the first
// error. With a mapped recording, the user stacks of DWARF samples are
// read where they lie in the file (withUserPayload): if it shrank
// meanwhile, reading them faults, which becomes the error.
func (a *attributor) deliverAll(keys []orderKey) (err error) {
	if a.mapped != nil {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer a.reader.CatchFault(&err)
	}
	if a.held.n > 0 && !a.holding() {
		if err := a.releaseHeld(); err != nil {
			return err
		}
	}
	for i, k := range keys {
		if j := i + eventAhead; j < len(keys) {
			cacheline.Prefetch(keys[j].e)
		}
		if j := i + touchAhead; j < len(keys) {
			a.prefetchFor(keys[j].e)
		}
		a.now = k.time
		if err = a.deliver(k.e); err != nil {
			return err
		}
	}
	return nil
}

// Events are prefetched ahead of their delivery (cacheline.Prefetch):
// the decoder wrote each on the other core, and a sample's callchain
// and sample-cache slot are far apart in memory, so that loading them
// when the delivery came waited on the cache. eventAhead events ahead
// deliverAll prefetches the event; touchAhead ahead, the event being in
// the cache by then, what delivering it will read (prefetchFor).
//
// Plain loads 4 events ahead (of the event and its chain's ends) had
// taken the -a -g children table from 0.72 to 0.64-0.68 s; 2 or 7 ahead
// did no better. But a load waits to retire until its data comes, and
// the instructions behind it with it; a prefetch does not. With the
// sample-cache slot prefetched too, the attributor's goroutine was busy
// 134 ms of a -a table instead of 157 (go tool trace, medians of 5),
// where the load that missed the slot had been 10 % of the run's CPU
// time (perf record of kbench). Prefetching the frame cache's slots of a
// chain 2 or 3 events ahead too made the -a -g children table slower
// and the gcc one no faster.
const (
	eventAhead = 8
	touchAhead = 4
)

// prefetchFor prefetches what delivering e reads beyond e itself: the
// ends of its callchain and its sample-cache slot (sampleSlotIndex).
func (a *attributor) prefetchFor(e *event) {
	if c := e.addrs; len(c) > 0 {
		cacheline.Prefetch(&c[0])
		cacheline.Prefetch(&c[len(c)-1])
	}
	if a.samples != nil {
		cacheline.Prefetch(&a.samples[sampleSlotIndex(e, a.sampleBits)])
	}
}

// decodeConfig is what decode does beyond reading records: which
// payloads the run's views need, and where it reports.
type decodeConfig struct {
	progress   func(int64) // called with the file offset every 64 Ki records
	wantChains bool        // callchains (and the user stacks behind them)
	// markChains marks chains without an unknown context marker
	// (sampleKnownMarkers), for the views that call chainVoid.
	markChains  bool
	branches    bool   // branch stacks, as (to, from) pairs
	kmodsecType uint32 // the record type of KMOD_SEC_MAP
	lost        *lostCounts
	kernelSeen  func(kernelHint) // see decode
	// stat replays perf stat record's counters into the script's text
	// (nil: not a script view).
	stat *perfstat.Counters
}

// decode reads records, copies out what attribution needs (callchains
// only when wanted), puts the events in perf's order with an orderer and
// sends its deliveries, at most flowBytes of them in flight. Ordering
// here, beside decoding, leaves the attributor only the delivery.
// mapped is r's mapping (perfdata.Reader.MappedData): the user stacks
// of DWARF samples whose records are stable stay there.
// cfg.kernelSeen, if not nil, is called at the first kernel-mode sample
// after a kernel MMAP (a recording of user space can have kernel samples,
// by skid, and no kernel map for them), with what the MMAPs before it told.
func decode(r *perfdata.Reader, mapped []byte, out chan<- delivery, pools *orderPools, flow *flowLimit, errc chan<- error, cfg decodeConfig) {
	defer close(out)
	if mapped != nil {
		// Record bytes read after Next returned (build ids, KMOD_SEC_MAP
		// records) fault as in Next if the file shrank: an error too.
		var err error
		defer func() {
			if err != nil {
				errc <- err
			}
		}()
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer r.CatchFault(&err)
	}
	o := &orderer{
		send: func(d delivery) {
			flow.acquire(d.bytes)
			out <- d
		},
		segment: pools.segment,
		keyBuf:  pools.keys,
		doneBuf: pools.done,
		block:   pools.block,
	}
	o.onHalf = func() { o.deliverNow(&event{kf: uint8(evHalfFlush)}, 0, false) }
	records := 0
	kernelMaps := false // a kernel MMAP was read
	var hint kernelHint // what the kernel MMAPs told
	var e event         // one for all records: the orderer copies it
	var t uint64        // its time
	copyChain := false  // e.addrs is the reader's: the orderer copies it too
	var slab addrSlab
	firstTo := fileFirstTo(r)
	// Without callchains wanted, a sample of fixed-size fields (most
	// records) is read straight into fs, then into its event: the reader
	// took 16.5 ns a sample rather than 35.1 through a Sample
	// (BenchmarkStageDecodeFixed, the -a recording), the -a table 4 %
	// less time. sample is what every sample does first.
	//
	// Its attr is one the reader had: a file's, checked here, or a
	// pipe's HEADER_ATTR, checked as Next reads it (maxEventIndex).
	if len(r.Attrs()) > maxEventIndex+1 {
		errc <- tooManyEvents(r, 0)
		return
	}
	fixed := !cfg.wantChains && !plainSampleOff
	var fs perfdata.FixedSample
	sample := func(cpumode perfdata.CPUMode) {
		if cfg.kernelSeen != nil && kernelMaps && cpumode == perfdata.CPUModeKernel {
			cfg.kernelSeen(hint)
			cfg.kernelSeen = nil
		}
	}
	for {
		took := fixed && r.NextFixedSample(&fs, true)
		if !took && !r.Next() {
			break
		}
		if records++; cfg.progress != nil && records%(1<<16) == 0 {
			cfg.progress(r.Raw().Offset)
		}
		if took {
			sample(fs.CPUMode())
			a := fs.Attr
			period, cpu := samplePeriodCPU(a, fs.Period, fs.CPU)
			if t = fs.Time; queuedAt(t) {
				queuePlain(o, fs.IP, period, fs.Pid, fs.Tid, cpu, uint16(a.Index), uint8(fs.CPUMode()), t)
				continue
			}
			e = event{kf: uint8(evSample), cpumode: uint8(fs.CPUMode()), pid: fs.Pid, tid: fs.Tid, ip: fs.IP, period: period,
				attr: uint16(a.Index), ppid: cpu}
			o.push(&e, t, false)
			continue
		}
		if len(r.Attrs()) > maxEventIndex+1 {
			errc <- tooManyEvents(r, r.Raw().Offset)
			return
		}
		switch rec := r.Record().(type) {
		case *perfdata.Sample:
			sample(rec.CPUMode())
			period, cpu := samplePeriodCPU(rec.Attr, rec.Period, rec.CPU)
			t = rec.Time
			if plainSample(rec, cfg) {
				queuePlain(o, rec.IP, period, rec.Pid, rec.Tid, cpu, attrIndex(r, rec.Attr), uint8(rec.CPUMode()), t)
				continue
			}
			e = event{kf: uint8(evSample), cpumode: uint8(rec.CPUMode()), pid: rec.Pid, tid: rec.Tid, ip: rec.IP, period: period,
				attr: attrIndex(r, rec.Attr), ppid: cpu}
			if rec.Attr != nil && rec.Attr.SampleType&perfdata.SampleFormatRead != 0 {
				e.side = &sideband{off: rec.Offset, reads: readValuesOf(r, rec.Read.Values)}
			}
			if cfg.wantChains && rec.Attr != nil && rec.Attr.SampleType&perfdata.SampleFormatCallchain != 0 {
				// Sampled, even empty (a DWARF-mode user sample's kernel
				// chain): perf script prints the chain form then.
				e.addrs = emptyChain
				lbr, isLBR := lbrCallchain(&slab, rec, firstTo)
				var b []uint64
				if !isLBR && needsUnwind(rec.Attr) {
					var stable []byte
					if mapped != nil && r.RecordsStable() {
						stable = mapped
					}
					b = withUserPayload(&slab, rec, stable) // the chain, and the user stack behind it (dwarf.go)
				}
				switch {
				case isLBR:
					e.addrs = lbr
					e.kf |= sampleLBR
				case b != nil:
					e.addrs = b
				case len(rec.Callchain) == 0:
				case stableChain(mapped, r, rec.Callchain):
					e.addrs = rec.Callchain[:len(rec.Callchain):len(rec.Callchain)] // read where it lies, as the user stacks are
				default:
					// The reader's buffer: push copies it into the
					// event's segment.
					e.addrs, copyChain = rec.Callchain[:len(rec.Callchain):len(rec.Callchain)], true
				}
				if cfg.markChains && !isLBR && b == nil && !knownMarkersOff && knownMarkers(e.addrs) {
					e.kf |= sampleKnownMarkers
				}
			} else if cfg.branches && len(rec.Branches) > 0 {
				e.addrs = slab.take(2 * len(rec.Branches))
				for i, b := range rec.Branches {
					e.addrs[2*i], e.addrs[2*i+1] = b.To, b.From
				}
			}
		case *perfdata.Mmap:
			if rec.CPUMode() == perfdata.CPUModeKernel {
				kernelMaps = true
				hint.noTables = hint.noTables || machine.IsModuleMmap(rec.Filename)
				if name, addr, ok := machine.RefReloc(rec.Filename, rec.Pgoff); ok {
					hint.refName, hint.refAddr = name, addr
				}
				if machine.IsKernelMmap(rec.Filename) && buildIDDefined(rec.BuildID) {
					hint.buildID = slices.Clone(rec.BuildID)
				}
			}
			e, t = event{kf: uint8(evMmap), side: &sideband{off: rec.Offset, mmap: machine.MmapOf(rec)}}, rec.SampleID.Time
			if buildIDDefined(rec.BuildID) {
				e.side.buildID = slices.Clone(rec.BuildID)
			}
		case *perfdata.Fork:
			e, t = event{kf: uint8(evFork), pid: rec.Pid, ppid: rec.Ppid, tid: rec.Tid, ip: uint64(rec.Ptid), period: uint64(rec.Misc)}, rec.SampleID.Time
		case *perfdata.Comm:
			e, t = event{kf: uint8(evComm), pid: rec.Pid, tid: rec.Tid, period: uint64(rec.Misc), side: &sideband{comm: rec.Comm}}, rec.SampleID.Time
		case *perfdata.Exit:
			e, t = event{kf: uint8(evExit), pid: rec.Pid, tid: rec.Tid}, rec.SampleID.Time
		case *perfdata.Ksymbol:
			e, t = event{kf: uint8(evKsymbol), side: &sideband{rare: &rareSideband{ksym: machine.KsymbolOf(rec)}}}, rec.SampleID.Time
		case *perfdata.Lost:
			cfg.lost.chunks++
			cfg.lost.events += rec.Lost
			continue
		case *perfdata.LostSamples:
			cfg.lost.samples += rec.Lost
			continue
		case *perfdata.FinishedRound:
			o.round()
			continue
		case *perfdata.BuildID:
			// perf applies HEADER_BUILD_ID as it reads it, before the
			// queued events (perf_session__process_user_event,
			// perf_event__process_build_id): with time 0 the orderer
			// delivers it at once.
			e, t = event{kf: uint8(evBuildID), cpumode: uint8(rec.CPUMode()), pid: uint32(rec.Pid),
				side: &sideband{off: rec.Offset, rare: &rareSideband{buildID: slices.Clone(rec.BuildID), bidPath: rec.Filename}}}, 0
		case *perfdata.Unknown:
			if cfg.stat != nil && perfstat.IsRecord(rec.Type) && uint32(rec.Type) != cfg.kmodsecType {
				// perf handles these as it reads them: at once.
				raw := r.Raw()
				text, err := cfg.stat.Record(nil, raw.Data, raw.ByteOrder, raw.Offset)
				if err != nil {
					errc <- fmt.Errorf("attrib: %w", err)
					return
				}
				warns := cfg.stat.Warnings()
				if len(text) == 0 && len(warns) == 0 {
					continue
				}
				e, t = event{kf: uint8(evText), side: &sideband{rare: &rareSideband{text: string(text), warns: warns}}}, 0
				break
			}
			if uint32(rec.Type) != cfg.kmodsecType {
				continue
			}
			raw := r.Raw()
			km, err := kmodsec.Decode(raw.Data, raw.ByteOrder, raw.IDHdrSize)
			if err != nil {
				errc <- fmt.Errorf("attrib: KMOD_SEC_MAP record at file offset %#x: %w", raw.Offset, err)
				return
			}
			var time uint64
			if id, err := r.ParseSampleID(raw); err == nil {
				time = id.Time
			}
			e, t = event{kf: uint8(evSectionMap), side: &sideband{rare: &rareSideband{sec: km.Map(), secPath: km.Path}}}, time
		default:
			continue
		}
		o.push(&e, t, copyChain)
		copyChain = false
	}
	o.finish()
	cfg.lost.unordered = o.unordered
	slab.payload.seal()
	errc <- r.Err()
}

// plainSampleOff makes every sample go through orderer.push (tests).
var plainSampleOff bool

// samplePeriodCPU returns the period and the CPU of a sample of attr a
// whose fields period and cpu hold what the record has: perf's default
// period when the sample type has none, the attr's sample_period (or
// sample_freq, the same field: evsel__parse_sample), and perf's
// sample->cpu, (u32)-1 when not sampled.
func samplePeriodCPU(a *perfdata.Attr, period uint64, cpu uint32) (uint64, uint32) {
	if a != nil && a.SampleType&perfdata.SampleFormatPeriod == 0 {
		period = a.SamplePeriod
	}
	if a == nil || a.SampleType&perfdata.SampleFormatCPU == 0 {
		cpu = ^uint32(0)
	}
	return period, cpu
}

// queuePlain queues a plain sample (plainSample) at time t: made in the
// orderer's segment, not copied there (push), a field at a time. A
// composite literal was built on the stack and copied in 16-byte moves
// that waited for the narrower stores before them (no store forwarding):
// a third of the decoder's time on the -a table (perf annotate).
func queuePlain(o *orderer, ip, period uint64, pid, tid, cpu uint32, attr uint16, cpumode uint8, t uint64) {
	ep := o.reserve(&o.cur, true) // zeroed
	ep.ip, ep.period = ip, period
	ep.pid, ep.tid, ep.ppid = pid, tid, cpu // ppid holds the CPU (event.cpu)
	ep.attr, ep.kf, ep.cpumode = attr, uint8(evSample), cpumode
	o.queued(ep, t)
}

// plainSample reports whether rec makes an event with no payload beyond
// its fields, queued by time (orderer.push's common case): a timestamp
// the orderer queues, no read values, and no callchain or branch stack
// the views want.
func plainSample(rec *perfdata.Sample, cfg decodeConfig) bool {
	if plainSampleOff || !queuedAt(rec.Time) || rec.Attr == nil {
		return false
	}
	t := rec.Attr.SampleType
	return t&perfdata.SampleFormatRead == 0 &&
		!(cfg.wantChains && t&perfdata.SampleFormatCallchain != 0) &&
		!(cfg.branches && len(rec.Branches) > 0)
}

// buildIDDefined is perf 6.1's build_id__is_defined, which an MMAP2's
// build id must pass to be given to its DSO (map__new,
// machine__process_kernel_mmap_event): not empty, not all zero.
func buildIDDefined(id []byte) bool {
	return slices.ContainsFunc(id, func(b byte) bool { return b != 0 })
}

// stableChain reports whether chain lies in mapped, r's mapping, in a
// stable record (perfdata.Reader.RecordsStable): an event may then keep
// it past Next, its bytes read at delivery, where a fault is an error
// (deliverAll).
func stableChain(mapped []byte, r *perfdata.Reader, chain []uint64) bool {
	if mapped == nil || !r.RecordsStable() {
		return false
	}
	_, ok := mappedOffset(mapped, wordBytes(chain))
	return ok
}

// emptyChain is the callchain of a sample that has one, of no entries:
// not nil, so that it prints as perf prints an empty chain.
var emptyChain = []uint64{}

// addrSlab hands out the address slices of LBR callchains and branch
// stacks from large blocks: one allocation per 64 Ki addresses instead
// of one per sample; a block is freed when no event refers to it any
// more. Plain callchains go into their event's segment (orderer.push),
// DWARF samples' into the payload arena.
type addrSlab struct {
	block   []uint64
	payload payloadArena // DWARF samples' user stacks (dwarf.go)
}

func (s *addrSlab) take(n int) []uint64 {
	if n > len(s.block) {
		s.block = make([]uint64, max(n, 1<<16))
	}
	b := s.block[:n:n]
	s.block = s.block[n:]
	return b
}

// maxEventIndex is the largest index of an attr (an event) that the
// attribution tells apart: an event's index is 16 bits of its events
// (event.attr), which keeps them a cache line each. A recording of more
// events is refused (tooManyEvents), not counted under the wrong ones.
const maxEventIndex = math.MaxUint16

// tooManyEvents is the error for a recording of more than
// maxEventIndex+1 attrs: in its header (off 0), or as of the record at
// file offset off (a pipe's HEADER_ATTR).
func tooManyEvents(r *perfdata.Reader, off int64) error {
	where := "header"
	if off != 0 {
		where = fmt.Sprintf("record at file offset %#x", off)
	}
	return fmt.Errorf("attrib: %s: the recording has %d events (attrs); at most %d are told apart", where, len(r.Attrs()), maxEventIndex+1)
}

// attrIndex returns the position of a in the recording's attrs (0 when it
// is not there).
func attrIndex(r *perfdata.Reader, a *perfdata.Attr) uint16 {
	if as := r.Attrs(); a != nil && a.Index < len(as) && as[a.Index] == a {
		return uint16(a.Index) // the reader sets Index as it adds the attr
	}
	return 0
}

// eventNames names the recording's attrs as perf 6.1 does: the i-th
// EVENT_DESC entry names the i-th attr (evlist__set_event_name finds the
// evsel by index, not by id: an entry without ids, as perf record writes
// for an event whose samples have none, names its attr too), else the
// name perf makes from the attr (Attr.Name).
func eventNames(r *perfdata.Reader) []string {
	descs := r.Features().Events
	var names []string
	for i, a := range r.Attrs() {
		if i < len(descs) {
			names = append(names, descs[i].Name)
		} else {
			names = append(names, a.Name()) // perf's evsel__name
		}
	}
	return names
}

// KernelBuildID returns the build id of the recording's kernel DSO, the
// build-id entry perf 6.1 names it by (machine__process_kernel_mmap_event;
// machine.Machine.KernelDSO): the first kernel entry that is not a
// module's, "[kernel.kallsyms]" or a vmlinux path. nil when there is none
// or it has no build id. perf chooses the kernel's symbols by it
// (dso__find_kallsyms): /proc/kallsyms only for the running kernel's.
func KernelBuildID(f *perfdata.Features) []byte {
	var ids [][]byte // the kernel entries', as kernelBuildIDs names them
	if f != nil {
		for _, b := range f.BuildIDs {
			if b.CPUMode() == perfdata.CPUModeKernel {
				ids = append(ids, b.BuildID)
			}
		}
	}
	if i := machine.KernelEntry(kernelBuildIDs(f)); i >= 0 && len(ids[i]) > 0 {
		return ids[i]
	}
	return nil
}

// kernelBuildIDs returns the filenames of the host kernel's build-id
// entries (header misc cpumode kernel), in order.
func kernelBuildIDs(f *perfdata.Features) []string {
	var names []string
	if f == nil {
		return nil
	}
	for _, b := range f.BuildIDs {
		if b.CPUMode() == perfdata.CPUModeKernel {
			names = append(names, b.Filename)
		}
	}
	return names
}

func buildIDMap(f *perfdata.Features) map[string][]byte {
	ids := make(map[string][]byte)
	if f == nil {
		return ids
	}
	for _, b := range f.BuildIDs {
		if len(b.BuildID) > 0 {
			ids[b.Filename] = b.BuildID
		}
	}
	return ids
}

type attributor struct {
	now        uint64 // the time of the event being delivered (its orderKey's)
	opts       Options
	m          *machine.Machine
	sym        *symbolizer
	res        *Result
	out        *scriptOut // with Options.Script
	cnt        *counter
	warnings   int
	halfWarned bool
	// branchLevel maps a branch target's key without its level to the
	// level it is counted under (the first sample's; half the memory
	// of keeping that key).
	branchLevel map[Key]bool
	acc         *accumulator // with Options.Children
	stacks      *stacker     // with Options.Stacks
	rows        *rowCounter  // with Options.SortKeys or Filter
	cumIDs      []int32      // cumulate's entries of one sample, reused
	execs       execs        // per process, its execs so far
	// cursor is perf's callchain cursor, for a children table of a
	// recording whose events differ in having callchains (nil otherwise):
	// see chainCursor.
	cursor *chainCursor
	// kstart is machine->kernel_start for FetchInsn, once the first
	// fetch has set it; x86_64 says whether the recording's arch is
	// x86_64 (its kernel start then stays 2^63).
	kstart    uint64
	kstartSet bool
	x86_64    bool
	dw        *dwarfState  // unwinds DWARF callchains (dwarf.go)
	samples   []sampleSlot // resolveSample's answers, 1<<sampleBits of them
	// countsCached says that a sample its slot answers may be counted in
	// the slot's cell alone (countCached): the run makes a flat table and
	// nothing else a sample would touch.
	countsCached bool
	// scriptCached says the same of a flat script's sample: its line
	// may be printed from the names slotPairs keeps for its slot
	// (scriptFromSlot). slotPairs holds, beside samples, the names of
	// each slot's last line.
	scriptCached bool
	slotPairs    []slotPair
	// selfIDs are, beside samples, the children table's entry of each
	// slot's sample for the slot's event (id+1; 0: none yet), and slotAt
	// the slot resolveSample answered from: a sample in a map without a
	// symbol found its entry by hashing its address each time
	// (accumulator.addrEntry), 4 % of the -a -g children table.
	selfIDs []int32
	slotAt  int
	// selfAnswers are, beside samples, the entry of each slot's sample in
	// perf's tree of a table by sort keys, for the thread key and event it
	// was found for (rowCounter.add): the row cache's slot of every
	// sample was 5 % of the -a -g recording's children table by
	// comm,dso,sym (a CPU profile).
	selfAnswers []frameAnswer
	unwound     []unwoundFrame // a sample's unwound frames, for the caller-order walks
	// chainFrames caches callchain frames (chainFrame); curFrame is the
	// one walkCallchain reports, nil for an unwound one.
	chainFrames []chainSlot // 1<<chainBits of them
	curFrame    *chainSlot
	// chainAt is the slot chainFrame answered from; frameAnswers are,
	// beside chainFrames, each slot's frame's entry in perf's tree of a
	// table by sort keys (cumulateRows), nil for other tables.
	chainAt      int
	frameAnswers []frameAnswer
	accAnswers   []accAnswer // so too without trees
	// dataSize is the recording's data size (0: not known), which sizes
	// the caches (cacheBits) when they are made; their sizes in bits.
	dataSize              uint64
	sampleBits, chainBits uint
	// mapped is the recording's mapping (perfdata.Reader.MappedData),
	// where DWARF samples' user stacks stay (withUserPayload); reader
	// turns a fault reading them into an error (CatchFault).
	mapped []byte
	reader *perfdata.Reader

	// held are the kernel samples held while the kernel is prepared, and
	// kernelWaiting reports whether it still is (nil: hold none; hold.go);
	// heldOrd is the held sample being attributed.
	held          heldSamples
	kernelWaiting func() bool
	heldOrd       *heldSample

	// readPeriods holds each sample id's last PERF_SAMPLE_READ value
	// (perf_sample_id.period; sampleread.go).
	readPeriods map[uint64]uint64

	sections *unwind.SectionCache // for the inline records (Options.CacheDir)
}

// fetchInsn is what perf script's arch_fetch_insn does to the maps for a
// sample (thread__memcpy): the first one with a non-zero IP sets the
// kernel start, which loads the kernel map (machine__get_kernel_start:
// 2^63 on x86_64, else the loaded kernel map's start); then the IP is
// looked up with the cpumode its address implies and the map found is
// loaded.
func (a *attributor) fetchInsn(e *event) {
	if e.ip == 0 {
		return
	}
	if !a.kstartSet {
		a.kstartSet = true
		a.kstart = 1 << 63
		if _, ok := a.m.Vmlinux(); ok {
			a.m.LoadKernel()
			if vm, ok := a.m.Vmlinux(); ok && !a.x86_64 && a.sym.hasKallsyms {
				a.kstart = vm.Start
			}
		}
	}
	mode := uint8(machine.CPUModeUser)
	if e.ip >= a.kstart {
		mode = machine.CPUModeKernel
	}
	if mode == e.cpumode {
		return // the sample's own lookup, done already, with the same effects
	}
	a.m.Resolve(mode, e.pid, e.tid, e.ip) // loads the map found (machine.OnModuleLoad)
}

func (a *attributor) deliver(e *event) error {
	if a.countsCached && a.countCached(e) {
		return nil
	}
	if a.scriptCached {
		if done, err := a.scriptFromSlot(e); done {
			return err
		}
	}
	if a.held.n > 0 && releasesHeld(e) {
		if err := a.releaseHeld(); err != nil {
			return err
		}
	}
	switch e.kind() {
	case evSample:
		var err error
		if e.side != nil && e.side.reads != nil {
			err = a.sampleReads(e)
		} else {
			err = a.sample(e)
		}
		releasePayload(e) // its user stack's memory is reused (dwarf.go)
		return err
	case evHalfFlush:
		if !a.halfWarned {
			a.halfWarned = true
			a.warn("no FINISHED_ROUND for %d MiB of events: delivered the oldest half, as perf does at its ordered-events queue limit", queueBound>>20)
		}
	case evMmap:
		if err := a.m.Mmap(e.side.mmap); err != nil {
			// perf warns about a record it cannot use and goes on.
			a.warn("skipped the MMAP record at file offset %#x: %v", e.side.off, err)
		} else if e.side.buildID != nil {
			a.mmapBuildID(e.side.mmap, e.side.buildID)
		}
	case evFork:
		a.m.Fork(e.pid, e.ppid, e.tid, uint32(e.ip), e.miscOf())
	case evExit:
		a.m.Exit(e.pid, e.tid)
	case evComm:
		exec := e.miscOf()&perfdata.MiscCommExec != 0
		if exec {
			a.flushRegCache(e.pid, e.tid) // by the thread's name before this one
		}
		a.m.Comm(e.pid, e.tid, e.side.comm)
		if exec {
			a.execs[e.pid]++
		}
	case evKsymbol:
		if err := a.m.Ksymbol(e.side.rare.ksym); err != nil {
			return fmt.Errorf("attrib: ksymbol %s: %w", e.side.rare.ksym.Name, err)
		}
	case evSectionMap:
		if err := a.m.SectionMap(e.side.rare.sec); err != nil {
			return fmt.Errorf("attrib: KMOD_SEC_MAP %s: %w", e.side.rare.sec.DSO, err)
		}
		a.sym.sectionFiles[e.side.rare.sec.DSO] = e.side.rare.secPath
	case evBuildID:
		a.buildID(e)
	case evText:
		for _, w := range e.side.rare.warns {
			a.warn("%s", w)
		}
		if a.out != nil && e.side.rare.text != "" {
			a.out.text(e.side.rare.text)
		}
	}
	return nil
}

// statCounters returns the state perf script keeps of a perf stat
// recording's counters, for a script view (nil for another).
func statCounters(r *perfdata.Reader, script bool) *perfstat.Counters {
	if !script {
		return nil
	}
	return perfstat.New(func() []string { return eventNames(r) }, func(id uint64) (int, bool) {
		a, ok := r.AttrByID(id)
		if !ok {
			return 0, false
		}
		return a.Index, true
	})
}

// buildID applies a HEADER_BUILD_ID record as perf 6.1's
// __event_process_build_id (util/header.c) does: a record whose cpumode
// is not kernel, guest kernel, user or guest user is ignored, and so is
// one whose pid is not -1 (HOST_KERNEL_ID): perf gives its build id to a
// DSO of the guest machine of that pid (machines__findnew), which the
// host's samples never use. Otherwise the host's DSO of that file name
// gets the build id, replacing any it had, which decides the files its
// symbols may come from when it is first loaded (a DSO already loaded
// keeps its symbols). A kernel one also names a kernel-space DSO, as the
// build-id feature's entries do.
func (a *attributor) buildID(e *event) {
	switch perfdata.CPUMode(e.cpumode) {
	case perfdata.CPUModeKernel, perfdata.CPUModeGuestKernel, perfdata.CPUModeUser, perfdata.CPUModeGuestUser:
	default:
		return
	}
	if int32(e.pid) != -1 {
		return
	}
	if len(e.side.rare.buildID) > 0 { // as buildIDMap
		a.sym.buildIDs[e.side.rare.bidPath] = e.side.rare.buildID
	}
	if perfdata.CPUMode(e.cpumode) == perfdata.CPUModeKernel {
		a.m.KernelBuildIDs = append(a.m.KernelBuildIDs, e.side.rare.bidPath)
	}
}

// mmapBuildID gives the DSO of an MMAP2 record the build id it carries
// (perf record --buildid-mmap), replacing any it had, as perf 6.1's
// map__new does for a user map and machine__process_kernel_mmap_event
// for a module's: like a HEADER_BUILD_ID record's (buildID), it decides
// the files the DSO's symbols may come from when it is first loaded.
// The kernel's own build id chooses the vmlinux (loadVmlinux); the
// decoder's copy of it (kernelHint.buildID) chooses the kallsyms file
// (Options.ChooseKallsyms) before the symbolizer reads any. A guest's
// maps are left alone, as buildID leaves them.
func (a *attributor) mmapBuildID(r machine.Mmap, id []byte) {
	switch r.CPUMode {
	case machine.CPUModeUser:
		a.sym.buildIDs[machine.UserMap(r).DSO] = id
	case machine.CPUModeKernel:
		switch {
		case machine.IsModuleMmap(r.Filename):
			a.sym.buildIDs[r.Filename] = id
		case machine.IsKernelMmap(r.Filename):
			a.sym.kernelMmapBuildID = id // which vmlinux fits (loadVmlinux)
		}
	}
}

func (a *attributor) sample(e *event) error {
	f := a.opts.Filter
	if f.outsideTime(a.now) || a.opts.Script != nil && f.otherCPU(e.cpu()) {
		return nil // perf drops it before resolving it
	}
	if a.kernelWaiting != nil {
		if held, err := a.hold(e); held || err != nil {
			return err
		}
	}
	kernel := e.cpumode == machine.CPUModeKernel
	// perf's thread__find_map: other than kernel and user cpumodes find
	// no map at level "H", and a guest one (perf report without --guest)
	// marks the sample filtered: perf script skips it, perf report counts
	// it in the totals and hides the entries it makes.
	hyper := !kernel && e.cpumode != machine.CPUModeUser
	guest := e.cpumode == machine.CPUModeGuestKernel || e.cpumode == machine.CPUModeGuestUser
	if a.acc != nil {
		a.acc.hiding = guest
	}
	st, i, slot, ok := a.resolveSample(e)
	if !ok && a.held.n > 0 {
		// Its key is its address alone: the held samples come first.
		if err := a.releaseHeld(); err != nil {
			return err
		}
	}
	var mp index.Map
	if ok {
		mp = st.key.m
	}
	if f.otherCPU(e.cpu()) {
		return nil // perf report drops it after resolving it
	}
	ord := a.ordinal(e)
	event := int(e.attr)
	c := Counts{1, e.period}
	var key Key
	var sym symbols.Symbol
	hasSym := false
	var obj objectName // the sample's entry, if in an object symbol
	var self int32     // the Children entry of the sample itself
	var hint rowHint   // for a table by sort keys (rowCache)
	if ok {
		if !a.opts.NoCounts && !a.opts.NoSampleSets {
			st.bm.Add(ord)
		}
		t := a.stateTable(st)
		addr := mp.MapIP(e.ip)
		if a.rows != nil {
			hint = rowHint{st: st, i: int32(i), addr: addr}
		}
		if !a.opts.NoCounts {
			// A cached sample's count is its cell's (sampleSlot.cell).
			if slot != nil && slot.cell != nil && slot.event == int32(event) {
				slot.cell.add(c)
			} else if cell := st.add(t, i, addr, event, c); slot != nil {
				slot.cell, slot.event = cell, int32(event)
				if i >= 0 && t.IsObject(i) {
					slot.event |= objectSlot
				}
				if a.selfIDs != nil {
					a.selfIDs[a.slotAt] = 0 // another sample's, or event's
				}
			}
		}
		// The tables that name rows need it: the flat table's, the rows
		// by sort keys and the children table's entries.
		if i >= 0 && (a.rows != nil || a.acc != nil || a.flatTable()) && t.IsObject(i) {
			s := t.Symbol(i)
			obj = objectHit(mp, s.Start, addr)
			if a.flatTable() {
				a.res.noteObject(MapSym{Map: mp, Kernel: kernel, Sym: s.Name, Addr: s.Start, Event: event}.Key(), obj)
			}
		}
		if a.acc != nil {
			self = a.selfEntry(st, t, i, event, addr, slot)
		}
		// A table by sort keys alone names the symbol when it needs it
		// (rowCounter.add, from hint).
		named := a.opts.Script != nil || a.stacks != nil || f != nil
		if named || a.rows != nil {
			key = Key{DSO: mp.DSO, Sym: symbols.Unknown, Kernel: kernel, Addr: addr, Event: event}
			if i >= 0 && named {
				sym, hasSym = t.Symbol(i), true
				key.Sym, key.Addr = sym.Name, sym.Start
			}
		}
	} else {
		a.res.Unknown++
		key = Key{DSO: symbols.Unknown, Sym: symbols.Unknown, Kernel: kernel, Hyper: hyper, Addr: e.ip, Event: event}
		if a.acc != nil {
			self = a.acc.noMapEntry(e.ip, kernel, hyper, event)
		}
		if !a.opts.NoCounts {
			a.cnt.addUnknown(key, guest, c)
		}
	}
	filtered := guest
	var t *machine.Thread
	if f != nil || a.rows != nil {
		t = a.m.SampleThread(e.pid, e.tid)
		filtered = f.filtered(t, mp, ok, kernel, sym, hasSym) || guest
	}
	if a.res.Branches != nil {
		a.branches(e, kernel, event, filtered)
	}
	if a.acc != nil {
		a.cumulate(e, self, obj, kernel, hyper, event, c)
	}
	if t != nil && a.res.Branches == nil { // branch mode: a row per entry (branchRow)
		if a.rows != nil {
			tk := a.rows.threadKey(t, int32(e.cpu()))
			self, r := a.rows.add(key, sym.End, t, int32(e.cpu()), tk, a.rowOwner(e.pid), filtered, c, hint, a.selfAnswer(slot))
			r.obj.note(obj)
			if a.rows.acc != nil {
				a.cumulateRows(e, t, tk, self, key.Kernel, key.Hyper, filtered, c)
			}
		}
	}
	if filtered {
		return nil // perf script does not print it, nor fetch its instruction
	}
	if a.stacks != nil {
		a.stack(e, mp, ok, key.Sym, c)
	}
	var err error
	if a.opts.Script != nil {
		err = a.script(e, key)
		if a.scriptCached && slot != nil && e.addrs == nil {
			if a.slotPairs == nil {
				a.slotPairs = make([]slotPair, len(a.samples))
			}
			// The names of the one line script added (endSample may
			// have handed the line over), not looked up again.
			a.slotPairs[a.slotAt] = slotPair{st: slot.st, i: slot.i, pair: a.out.lastPair}
		}
	}
	if a.opts.FetchInsn {
		a.fetchInsn(e)
	}
	return err
}

// slotPair is the names of a sample-cache slot's last script line: the
// number of its (symbol, DSO) pair (scriptNames.pair), and the map state
// and symbol the slot held then, whose names those are. A slot filled
// again with another map or symbol keeps its pair until a line replaces
// it, but the pair no longer matches.
type slotPair struct {
	st   *mapState
	i    int32
	pair uint32
}

// scriptFromSlot prints sample e's script line as sample would, from
// the names its sample-cache slot keeps (slotPairs), and reports whether
// it did: a flat script's sample (scriptCached) of no callchain whose
// slot holds its address and maps' version, and whose slot's last line
// named the slot's map and symbol. sample would resolve it to that map
// and symbol, print the line, and fetch the instruction if asked: no
// filter, no other view. Most samples of a system-wide script repeat an
// address of their process; their lines skip sample's work for every
// view and the names' lookup by string (scriptNames.pair).
func (a *attributor) scriptFromSlot(e *event) (bool, error) {
	if e.addrs != nil || a.slotPairs == nil {
		return false, nil
	}
	slot, at := a.cachedAnswer(e)
	if slot == nil || a.slotPairs[at].st != slot.st || a.slotPairs[at].i != slot.i {
		return false, nil
	}
	a.ordinal(e)
	a.out.addPair(' ', e.ip, a.slotPairs[at].pair)
	err := a.out.endSample()
	if a.opts.FetchInsn {
		a.fetchInsn(e)
	}
	return true, err
}

// perfTypeTracepoint is perf_event_attr.type's PERF_TYPE_TRACEPOINT.
const perfTypeTracepoint = 2

// flatTable reports whether the run makes perf report's flat table by
// dso,sym: counts, and no children, branch, sort-key, stack or script
// output.
func (a *attributor) flatTable() bool {
	return !a.opts.NoCounts && a.opts.Script == nil && a.acc == nil && a.rows == nil && a.stacks == nil && a.res.Branches == nil
}

// objectName is what perf report names the row of an object symbol
// with (_hist_entry__sym_snprintf): he->ip - map->unmap_ip(map,
// sym->start). A hist entry keeps the address of the entry that made it
// (he->ip: a sample's map-relative address, a callchain frame's raw one)
// and takes the map of every entry merged into it (hists__findnew_entry
// updates he->ms.map), so the offset is the first entry's address less
// the symbol's start mapped back through the last entry's map: large
// when processes map the DSO at different addresses.
type objectName struct {
	set      bool
	at, base uint64
}

// objectHit is the objectName of one entry made at address at in map mp,
// in the object symbol starting at symStart.
func objectHit(mp index.Map, symStart, at uint64) objectName {
	return objectName{true, at, mp.UnmapIP(symStart)}
}

// note merges entry h into the row o names: the first entry keeps its
// address, the last one's map counts.
func (o *objectName) note(h objectName) {
	switch {
	case !h.set:
	case !o.set:
		*o = h
	default:
		o.base = h.base
	}
}

// off is the offset perf prints.
func (o objectName) off() uint64 { return o.at - o.base }

// noteObject notes a sample in the object symbol of the flat table's row
// k (objectName.note).
func (r *Result) noteObject(k Key, h objectName) {
	if r.objects == nil {
		r.objects = make(map[Key]objectName)
	}
	o := r.objects[k]
	o.note(h)
	r.objects[k] = o
}

// countCached counts sample e as sample would, in the cell of the
// sample-cache slot that answers for it, and reports whether it did: a
// flat table's sample (countsCached) whose slot holds its address, its
// maps' version and a cell of its event. sample would resolve it to the
// slot's map and symbol, count it in that cell, and do nothing else: no
// filter, no sample sets, no other view; a kernel sample is not being
// held (hold), and no object symbol's slot holds its event (sampleSlot).
// Most samples of a flat table (95 % of a 2.61 M-sample -a recording's)
// are counted here, without sample's work for every view.
func (a *attributor) countCached(e *event) bool {
	if e.cpumode == machine.CPUModeKernel && a.kernelWaiting != nil {
		return false
	}
	slot, _ := a.cachedAnswer(e)
	if slot == nil || slot.cell == nil || slot.event != int32(e.attr) {
		return false
	}
	a.ordinal(e)
	slot.cell.add(Counts{1, e.period})
	return true
}

// cachedAnswer returns the sample-cache slot that answers e, and its
// index, as resolveSample would find it (nil: none): e is a sample
// without a payload (sideband), of user or kernel mode, and the slot
// holds its address and its maps' version. The fast paths of deliver
// (countCached, scriptFromSlot) ask it; a sample it does not answer
// goes through sample.
func (a *attributor) cachedAnswer(e *event) (*sampleSlot, int) {
	if e.kf != uint8(evSample) || e.side != nil || a.samples == nil ||
		e.cpumode != machine.CPUModeUser && e.cpumode != machine.CPUModeKernel {
		return nil, 0
	}
	at := sampleSlotIndex(e, a.sampleBits)
	if slot := &a.samples[at]; slot.answers(e, a.m.MapsVersionOf(e.cpumode, e.pid, e.tid)) {
		return slot, at
	}
	return nil, at
}

// resolveSample finds the map of e's address (Machine.Resolve), its
// state and the index of its symbol in the state's table (-1: none).
// Samples repeat addresses (on a system-wide recording, 96 % of samples
// share their process and address with an earlier one): answers are
// cached by address and the version of the maps they were found in
// (machine.Thread.MapsVersion, Machine.KernelVersion), once the table is
// final; a hit skips the map search, the state lookup and the symbol
// search, and has no effect that a lookup would have had (the thread is
// still looked up, and a lookup that loads the kernel changes the
// version, so it is not cached).
// The answer's slot, when not nil, holds it: the caller may keep the
// sample's count cell there.
func (a *attributor) resolveSample(e *event) (st *mapState, i int, slot *sampleSlot, ok bool) {
	if sampleCacheOff || e.cpumode != machine.CPUModeUser && e.cpumode != machine.CPUModeKernel {
		st, i, ok = a.resolveUncached(e) // other modes find no map
		return st, i, nil, ok
	}
	ver := a.m.MapsVersionOf(e.cpumode, e.pid, e.tid)
	if a.samples == nil {
		a.sampleBits = sampleSlotBits(a.dataSize)
		a.samples = make([]sampleSlot, 1<<a.sampleBits)
	}
	a.slotAt = sampleSlotIndex(e, a.sampleBits)
	slot = &a.samples[a.slotAt]
	if slot.answers(e, ver) {
		return slot.st, int(slot.i), slot, true
	}
	if st, i, ok = a.resolveUncached(e); !ok {
		return nil, -1, nil, false
	}
	if st.final && a.m.MapsVersionOf(e.cpumode, e.pid, e.tid) == ver {
		*slot = sampleSlot{ip: e.ip, ver: ver, st: st, i: int32(i)}
		if a.selfAnswers != nil {
			a.selfAnswers[a.slotAt] = frameAnswer{} // the slot's sample's before
		}
		return st, i, slot, true
	}
	return st, i, nil, true
}

// selfEntry is the children table's entry of a sample at map-relative
// address addr in st's map, symbol i of table t (-1: none), for event;
// slot, if not nil, is where resolveSample found the sample, whose
// entry for its counted event it keeps. The slot's answers are for a
// final table (resolveSample), so the entry stays that of its address.
func (a *attributor) selfEntry(st *mapState, t *symbols.Table, i, event int, addr uint64, slot *sampleSlot) int32 {
	cached := slot != nil && slot.cell != nil && slot.event == int32(event)
	if cached {
		if a.selfIDs == nil {
			a.selfIDs = make([]int32, len(a.samples))
		}
		if id := a.selfIDs[a.slotAt]; id > 0 {
			return id - 1
		}
	}
	var id int32
	if i >= 0 {
		id = a.acc.symEntry(st, t, i, event, addr)
	} else {
		id = a.acc.addrEntry(st, addr, event)
	}
	if cached {
		a.selfIDs[a.slotAt] = id + 1
	}
	return id
}

// selfAnswer is where the row of the sample resolveSample answered from
// slot is kept (selfAnswers), nil without a slot or for a table without
// perf's trees and a row cache.
func (a *attributor) selfAnswer(slot *sampleSlot) *frameAnswer {
	if slot == nil || a.rows.hist == nil || a.rows.cache == nil {
		return nil
	}
	if a.selfAnswers == nil {
		a.selfAnswers = make([]frameAnswer, len(a.samples))
	}
	return &a.selfAnswers[a.slotAt]
}

// resolveUncached is resolveSample without the cache.
func (a *attributor) resolveUncached(e *event) (st *mapState, i int, ok bool) {
	mp, ok := a.m.Resolve(e.cpumode, e.pid, e.tid, e.ip)
	if !ok {
		return nil, -1, false
	}
	st = a.cnt.state(mp, e.cpumode == machine.CPUModeKernel)
	return st, a.sym.findIn(mp, a.stateTable(st), mp.MapIP(e.ip)), true
}

// sampleSlotIndex is the slot of the sample cache (1<<bits slots) that
// keeps e's answer: its address hashed with its process in user mode,
// with the kernel's space in any other. The slot is checked against the
// version of the maps the answer was found in, but not hashed with it,
// so that deliverAll can prefetch the slot events ahead without looking
// up their thread (the version's owner), whose maps may change before
// their delivery.
func sampleSlotIndex(e *event, bits uint) int {
	space := uint64(e.pid)
	if e.cpumode != machine.CPUModeUser {
		space = kernelSlotSpace
	}
	return int(slotHash(e.ip, space, bits))
}

// kernelSlotSpace is sampleSlotIndex's process for samples not in user
// mode: no pid (32 bits) is it.
const kernelSlotSpace = 1 << 32

// sampleCacheOff makes resolveSample resolve every sample (tests).
var sampleCacheOff bool

// sampleCacheBits sizes attributor.samples at most: 64 Ki slots of 40
// bytes, 2.5 MiB (sampleSlotBits). A gcc build's recording, many short
// processes among many addresses, found 64 % of its samples in 16 Ki
// slots: 64 Ki took the attributor's busy time on its table from 361 to
// 305 ms (-trace, 5 runs), the table 0.482 -> 0.433 s, the children
// table 2.11 -> 2.04 s (scripts/abbench.sh 5, interleaved); 128 and 256
// Ki were no faster. On the -a table, whose samples hit 95 % of the
// time, 16 Ki were as fast, and the collector scans the cache (its slots
// hold pointers): the -a -g children table peaks 3 MB higher.
const sampleCacheBits = 16

// sampleSlotBits is the size in bits of the sample cache of a recording
// of size bytes of data: more slots than one a KiB of data, at least 1
// Ki, at most sampleCacheBits (from 32 MiB; a pipe's, of size 0,
// too). A slot a KiB rather than chainFrames' one per 256 bytes keeps
// recordings of 4-16 MB below perf's peak RSS.
func sampleSlotBits(size uint64) uint {
	if size == 0 {
		return sampleCacheBits
	}
	return cacheBits(max(size/4, 1), sampleCacheBits) // a known size stays known
}

// sampleSlot is resolveSample's answer for an address under one version
// of the maps (which also tells user mode from kernel mode: no address
// space and the kernel maps ever share a version).
type sampleSlot struct {
	ip  uint64
	ver uint64
	st  *mapState
	i   int32
	// event and cell are where the last sample of the slot was counted
	// (mapState.add's answer), when cell is set: another of that event
	// adds to the cell, without finding its symbol's count again. event
	// has objectSlot set when the symbol is an object, whose samples
	// name their rows (Result.noteObject): no sample of an event matches
	// it then, and each goes through sample's whole work.
	event int32
	cell  *Counts
}

// objectSlot marks a sampleSlot's event as an object symbol's: above any
// event index (maxEventIndex).
const objectSlot = 1 << 30

// answers reports whether the slot holds the answer for sample e, whose
// maps' version is ver.
func (s *sampleSlot) answers(e *event, ver uint64) bool {
	return s.st != nil && s.ip == e.ip && s.ver == ver
}

// stateTable returns the symbol table of st's map, asking the symbolizer
// until the table is final (a kernel or module table changes when the
// kernel loads) and keeping it then.
func (a *attributor) stateTable(st *mapState) *symbols.Table {
	if !st.final {
		st.table, st.final = a.sym.table(st.key.m)
	}
	return st.table
}

// branches counts the sample's branch-stack entries by target, as perf
// report's branch mode does (hist_iter_branch): sample__resolve_bstack
// resolves each entry's target, then its source, trying the thread's
// maps, then the kernel's (thread__find_cpumode_addr_location; resolving
// may load symbols, so the source is resolved too), and each entry adds
// period 1 under the target's (dso, symbol) with the sample's level.
func (a *attributor) branches(e *event, kernel bool, event int, filtered bool) {
	for i := 0; i+1 < len(e.addrs); i += 2 {
		to := e.addrs[i]
		k := Key{DSO: symbols.Unknown, Sym: symbols.Unknown, Addr: to, Event: event}
		if mp, inKernel, ok := a.resolveAnyMode(e, to); ok {
			k.DSO = ShortName(mp.DSO, inKernel)
			if sym, ok := a.sym.symbol(mp, to); ok {
				k.Sym, k.Addr = sym.Name, sym.Start
			}
		}
		a.resolveAnyMode(e, e.addrs[i+1])
		if a.rows != nil {
			a.branchRow(e, to, kernel, event, filtered)
			continue
		}
		// perf's rows are told apart by (dso, symbol) alone; the level
		// shown is the first entry's.
		level, seen := a.branchLevel[k]
		if !seen {
			level = kernel
			a.branchLevel[k] = level
		}
		k.Kernel = level
		c := a.res.Branches[k]
		c.add(Counts{1, 1})
		a.res.Branches[k] = c
	}
}

// resolveAnyMode finds the map of addr as perf does for a branch entry
// (thread__find_cpumode_addr_location): in the sample's thread's maps,
// else in the kernel's (inKernel).
// branchRow counts a branch-stack entry (target to) in the table by sort
// keys, as perf report's branch mode makes a hist entry of each: the
// sample's thread and CPU, the target's map and symbol
// (iter_next_branch_entry), at the sample's level, hidden when the sample
// was filtered (the entries take al->filtered, which machine__resolve set
// from the sample's own thread, map and symbol).
func (a *attributor) branchRow(e *event, to uint64, kernel bool, event int, filtered bool) {
	t := a.m.SampleThread(e.pid, e.tid)
	k := Key{DSO: symbols.Unknown, Sym: symbols.Unknown, Kernel: kernel, Addr: to, Event: event}
	var end uint64
	if mp, _, found := a.resolveAnyMode(e, to); found {
		k.DSO = mp.DSO
		if sym, ok := a.sym.symbol(mp, to); ok {
			k.Sym, k.Addr, end = sym.Name, sym.Start, sym.End
		}
	}
	a.rows.add(k, end, t, int32(e.cpu()), a.rows.threadKey(t, int32(e.cpu())), a.rowOwner(e.pid), filtered, Counts{1, 1}, rowHint{}, nil)
}

// rowOwner is the owner (execs.owner) of process pid's maps when the
// rows' hist trees compare it (histTree.foundFrom), else 0: no lookup
// per sample for tables that keep no tree.
func (a *attributor) rowOwner(pid uint32) int32 {
	if a.rows.hist == nil {
		return 0
	}
	return a.execs.owner(pid)
}

func (a *attributor) resolveAnyMode(e *event, addr uint64) (mp index.Map, inKernel, ok bool) {
	if mp, ok := a.m.Resolve(machine.CPUModeUser, e.pid, e.tid, addr); ok {
		return mp, false, true
	}
	mp, ok = a.m.Resolve(machine.CPUModeKernel, e.pid, e.tid, addr)
	return mp, true, ok
}

// lostCounts is what decode counted beside the events it delivered: the
// LOST and LOST_SAMPLES records, and the events the orderer queued out of
// order (orderer.unordered).
type lostCounts struct{ chunks, events, samples, unordered uint64 }

// hide hides the table row of k (Result.hidden).
func (r *Result) hide(k Key) {
	if r.hidden == nil {
		r.hidden = make(map[Key]bool)
	}
	r.hidden[k] = true
}

// LostWarnings returns what perf prints on stderr about lost data
// (perf_session__warn_about_errors): LOST chunks, and a sample drop
// rate above 5 %; and that AUX area traces were not decoded.
func (r *Result) LostWarnings() []string {
	var w []string
	if n := r.Stats.ByType[perfdata.RecordAuxtrace]; n != 0 {
		w = append(w, fmt.Sprintf("%d AUX area trace records (e.g. Intel PT) were not decoded: the samples perf synthesizes from them are missing", n))
	}
	if r.LostChunks != 0 {
		w = append(w, fmt.Sprintf("Processed %d events and lost %d chunks! Check IO/CPU overload!", r.Stats.Records, r.LostChunks))
	}
	if total := r.Samples + r.LostSamples; total != 0 {
		if rate := float64(r.LostSamples) / float64(total); rate > 0.05 {
			w = append(w, fmt.Sprintf("Processed %d samples and lost %3.2f%%!", total, rate*100))
		}
	}
	if r.UnknownIDs != 0 {
		w = append(w, fmt.Sprintf("%d samples with id not present in the header", r.UnknownIDs))
	}
	if r.Unordered != 0 {
		w = append(w, fmt.Sprintf("%d out of order events recorded.", r.Unordered))
	}
	return w
}

// maxWarnings bounds Result.Warnings.
const maxWarnings = 100

// warn records a warning.
func (a *attributor) warn(format string, args ...any) {
	a.warnings++
	switch {
	case a.warnings <= maxWarnings:
		a.res.Warnings = append(a.res.Warnings, fmt.Sprintf(format, args...))
	case a.warnings == maxWarnings+1:
		a.res.Warnings = append(a.res.Warnings, "more warnings left out")
	}
}

// Callchain context markers (PERF_CONTEXT_*).
const (
	contextMax         = ^uint64(0) - 4095 + 1 // (u64)-4095
	contextHV          = ^uint64(0) - 32 + 1
	contextKernel      = ^uint64(0) - 128 + 1
	contextUser        = ^uint64(0) - 512 + 1
	contextGuestKernel = ^uint64(0) - 2176 + 1 // PERF_CONTEXT_GUEST_KERNEL: invalid to perf 6.1
	maxStack           = 127                   // PERF_MAX_STACK_DEPTH, perf script's default
)

// knownMarkers reports whether every context marker in chain is one
// perf knows (contextMode): chainVoid then has nothing to find. The
// decoder looks, on its core, while the chain is in its cache (the
// attributor's own look took 3 % of its time on the -a -g children table).
func knownMarkers(chain []uint64) bool {
	for _, ip := range chain {
		if ip >= contextMax {
			if _, ok := contextMode(ip); !ok {
				return false
			}
		}
	}
	return true
}

// knownMarkersOff keeps the decoder from marking chains (tests).
var knownMarkersOff bool

// contextMode returns the cpumode a callchain context marker sets, as
// perf 6.1's add_callchain_ip knows them (hypervisor, kernel, user);
// false for any other (the guest markers too): perf then resets its
// callchain cursor, dropping the chain.
func contextMode(marker uint64) (uint8, bool) {
	switch marker {
	case contextHV:
		return machine.CPUModeHypervisor, true
	case contextKernel:
		return machine.CPUModeKernel, true
	case contextUser:
		return machine.CPUModeUser, true
	}
	return 0, false
}

// script writes the sample as perf script -F ip,sym,dso does (through
// a.out, which formats and writes on a goroutine of its own).
func (a *attributor) script(e *event, key Key) error {
	out := a.out
	if e.addrs == nil || a.opts.HideCallchain {
		out.add(' ', e.ip, key.Sym, key.DSO)
	} else {
		out.blank()
		a.scriptCallchain(e)
		out.blank()
	}
	return out.endSample()
}

// scriptCallchain prints each callchain entry: the address (the offset
// within its map for a user-space DSO), symbol and DSO.
func (a *attributor) scriptCallchain(e *event) {
	out := a.out
	start := out.mark()
	if !a.walkCallchain(e, func(ip uint64, mp *index.Map) {
		addr, sym, dso := ip, symbols.Unknown, symbols.Unknown
		if name := a.inlinedName(); name != "" {
			sym, dso = name, "inlined" // prints "name (inlined)", as perf prints an inlined frame
			addr = mp.MapIP(ip)
		} else if mp != nil {
			sym, dso, addr = a.frameName(mp, ip), mp.DSO, scriptAddr(mp, ip)
		}
		out.add('\t', addr, sym, dso)
	}) {
		out.drop(start) // perf dropped the chain
	}
}

// scriptAddr is the address a script line shows for ip in map mp:
// sample__fprintf_callchain shows the binary offset for user-space DSOs
// only, the address for kernel ones.
func scriptAddr(mp *index.Map, ip uint64) uint64 {
	if mp.Kind == index.KindUser || mp.Kind == index.KindAnon {
		return mp.MapIP(ip)
	}
	return ip
}

// walkCallchain resolves e's callchain as perf script does
// (thread__resolve_callchain_sample, callee order), calling frame with
// each frame's address and map (nil: none; valid during the call only):
// context markers set the cpumode of the frames after them, at most
// maxStack frames. An unknown
// marker drops the whole chain, as perf resets its cursor: walkCallchain
// then returns false, and the frames already reported are void. A DWARF
// sample's user frames, unwound from its stack, follow (dwarf.go).
func (a *attributor) walkCallchain(e *event, frame func(ip uint64, mp *index.Map)) bool {
	if hasUserStack(e) && chainReset(e.addrs) {
		a.unwindUser(e, frame, false) // perf appends the unwound frames to the emptied chain (dwarf.go)
		return true
	}
	cpumode := uint8(machine.CPUModeUser)
	n := 0
	vers := frameVersions{m: a.m, e: e}
	for _, ip := range e.addrs {
		if ip >= contextMax {
			mode, ok := contextMode(ip)
			if !ok {
				return false
			}
			cpumode = mode
			continue
		}
		if n++; n > maxStack && !e.has(sampleLBR) {
			break
		}
		f := a.chainFrame(ip, cpumode, &vers)
		a.curFrame = f
		if f.st != nil {
			frame(ip, &f.st.key.m)
		} else {
			frame(ip, nil)
		}
	}
	a.curFrame = nil
	a.unwindUser(e, frame, false) // then the user stack perf unwinds (dwarf.go)
	return true
}

// chainFrame returns the callchain frame at ip in cpumode, resolved for
// the sample's thread under its maps version now: cached by address,
// cpumode and version (a -g recording's frames repeat: resolving each
// from scratch was half of perf script's equivalent).
func (a *attributor) chainFrame(ip uint64, cpumode uint8, vers *frameVersions) *chainSlot {
	ver := vers.of(cpumode)
	if a.chainFrames == nil {
		a.makeChainFrames()
	}
	a.chainAt = int(slotHash(ip, ver, a.chainBits))
	slot := &a.chainFrames[a.chainAt]
	if slot.filled && slot.ip == ip && slot.ver == ver && slot.mode == cpumode && !sampleCacheOff {
		return slot
	}
	// Keyed by the version before resolving: resolving can load the
	// kernel, which makes a new version.
	*slot = chainSlot{ip: ip, ver: ver, mode: cpumode, filled: true}
	if a.frameAnswers != nil {
		a.frameAnswers[a.chainAt] = frameAnswer{} // the frame's before
	}
	if a.accAnswers != nil {
		a.accAnswers[a.chainAt] = accAnswer{}
	}
	if mp, ok := vers.resolve(cpumode, ip); ok {
		slot.st = a.cnt.state(mp, cpumode == machine.CPUModeKernel)
	}
	return slot
}

// makeChainFrames makes the callchain cache, sized by the recording.
func (a *attributor) makeChainFrames() {
	a.chainBits = cacheBits(a.dataSize, chainCacheBits)
	a.chainFrames = make([]chainSlot, 1<<a.chainBits)
}

// frameVersions resolves the frames of e's callchain and gives the maps
// version each resolves under (machine.Machine.MapsVersionOf), looking
// e's thread up once per chain, as perf does per sample.
type frameVersions struct {
	m *machine.Machine
	e *event
	t *machine.Thread // e's thread, once looked up
}

func (v *frameVersions) thread() *machine.Thread {
	if v.t == nil {
		v.t = v.m.SampleThread(v.e.pid, v.e.tid)
	}
	return v.t
}

// of is the version of the maps a frame of cpumode resolves in, now.
func (v *frameVersions) of(cpumode uint8) uint64 {
	if cpumode != machine.CPUModeUser {
		return v.m.KernelVersion()
	}
	return v.thread().MapsVersion()
}

// resolve is machine.Machine.Resolve for a frame of cpumode at ip.
func (v *frameVersions) resolve(cpumode uint8, ip uint64) (index.Map, bool) {
	if cpumode == machine.CPUModeUser {
		return v.thread().Find(ip)
	}
	return v.m.Resolve(cpumode, v.e.pid, v.e.tid, ip)
}

// chainCacheBits sizes attributor.chainFrames (32 Ki slots); tests
// shrink it, so that frames share slots.
var chainCacheBits uint = 15

// cacheBits is the size in bits of a cache of at most maxBits for a
// recording of size bytes of data (0: not known, as in a pipe): more
// slots than size/256 (the least power of two above it), at least 1 Ki.
// A small recording touches few addresses, but hashing spreads them over
// every page of a cache: the 1.5 MB of chainFrames put a 1.2 MB -g
// recording's script above perf script's peak RSS.
func cacheBits(size uint64, maxBits uint) uint {
	if size == 0 {
		return maxBits
	}
	return min(maxBits, max(10, uint(bits.Len64(size>>8))))
}

// chainSlot is a callchain frame's map state (nil: none) and, once
// named with a final symbol table, its symbol's name.
type chainSlot struct {
	ip, ver uint64
	st      *mapState
	name    string
	// sym is, once symSet, the index of the frame's symbol in st's final
	// table (-1: none), for tables by sort keys (cumulateRows).
	sym    int32
	symSet bool
	mode   uint8
	filled bool
}

// frameName returns the name of the symbol at ip in map mp, the frame
// walkCallchain is reporting, as a.sym.name does: from its cache slot
// when it has one, or from inlineFrames.
func (a *attributor) frameName(mp *index.Map, ip uint64) string {
	if a.dw != nil && a.dw.ownSet {
		return a.dw.own // inlineFrames' frame, named with its answers
	}
	f := a.curFrame
	if f == nil || f.st == nil || f.ip != ip {
		return a.sym.name(*mp, ip)
	}
	if f.name != "" {
		return f.name
	}
	t := a.stateTable(f.st)
	name := symbols.Unknown
	if i := a.sym.findIn(*mp, t, mp.MapIP(ip)); i >= 0 {
		name = t.Symbol(i).Name
	}
	if f.st.final {
		f.name = name
	}
	return name
}

// Canonical returns the canonical text of a result: per map, its sample
// count, the SHA-256 of its sample set and the map; per (dso, symbol), the
// count; and the [unknown] count. Two implementations agree when their
// canonical texts do.
func (r *Result) Canonical() string {
	var b strings.Builder
	maps := make([]index.Map, 0, len(r.ByMap))
	for mp := range r.ByMap {
		maps = append(maps, mp)
	}
	sortMaps(maps)
	for _, mp := range maps {
		bm := r.ByMap[mp]
		data, _ := bm.ToBytes()
		fmt.Fprintf(&b, "map %d %s %s\n", bm.GetCardinality(), index.Digest(string(data))[:16], mp)
	}
	for _, k := range sortedKeys(r.BySym) {
		c := r.BySym[k]
		fmt.Fprintf(&b, "sym %d %d %s %s %v %x %d\n", c.Samples, c.Period, k.DSO, k.Sym, k.Kernel, k.Addr, k.Event)
	}
	fmt.Fprintf(&b, "unknown %d of %d\n", r.Unknown, r.Samples)
	return b.String()
}

// Digest returns the SHA-256 of Canonical.
func (r *Result) Digest() string { return index.Digest(r.Canonical()) }

// isX86_64 is machine__is(machine, "x86_64") for a recording of arch (the
// host's when the recording names none).
func isX86_64(arch string) bool {
	if arch == "" {
		return runtime.GOARCH == "amd64"
	}
	return arch == "x86_64"
}

// appendScriptLine appends a line as perf script -F ip,sym,dso prints it:
// lead, the address in hex right-aligned in 16 columns ("%16x"), the
// symbol and the DSO in parentheses. Hand-written: fmt cost a quarter
// of -format script's time.
func appendScriptLine(b []byte, lead byte, addr uint64, sym, dso string) []byte {
	b = append(b, lead)
	var hex [16]byte
	i := len(hex)
	for {
		i--
		hex[i] = "0123456789abcdef"[addr&15]
		addr >>= 4
		if addr == 0 {
			break
		}
	}
	for range i {
		b = append(b, ' ')
	}
	b = append(b, hex[i:]...)
	b = append(b, ' ')
	b = append(b, sym...)
	b = append(b, " ("...)
	b = append(b, dso...)
	return append(b, ")\n"...)
}
