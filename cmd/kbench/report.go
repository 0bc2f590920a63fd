package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/internal/regular"
)

const reportUsage = `usage: kbench report [-format table|script|json|folded|pprof] [-kallsyms FILE] [-G]
                    [-children|-no-children] [-no-branch-stack] [-sort KEYS]
                    [-pid L] [-tid L] [-comm L] [-cpu L] [-time SLICES]
                    [-dso L] [-sym L]
                    [-impl btree|list] [-debugdir DIR] [-cachedir DIR] [-symfs DIR] [-vdso FILE]
                    [-vmlinux FILE] [-ignore-vmlinux]
                    [-o FILE]
                    [-progress auto|always|never] [-cpuprofile FILE]
                    [-memprofile FILE] [-trace FILE] FILE | -i FILE

Attribute every sample of the perf.data FILE ("-": standard input, e.g. a
pipe-mode recording) to a map and a symbol as perf does, and print:
  table   perf report --stdio --sort dso,sym --no-children -n -g none, by
          overhead; with -children, perf report --children's Children and
          Self columns; branch-stack entries for a recording with branch
          stacks (perf's branch mode) unless -no-branch-stack; one table
          per event group (perf's group view)
          -sort KEYS sorts and groups by perf report --sort keys: comm,
          pid, dso, sym, cpu; the filters select samples as perf's --pid,
          --tid, --comms, --cpu, --time, --dsos and --symbols do (L is a
          comma list), in every format
  script  perf script -F ip,sym,dso, line for line (for a perf stat
          record recording, its counters as perf script prints them)
  json    counts per symbol, per map with sample-set digests, and the digest
  folded  one line per distinct stack, "comm;outer;...;leaf count", as
          FlameGraph's stackcollapse-perf.pl folds perf script's output
  pprof   a profile.proto for go tool pprof (needs -o): stacks, real
          addresses, mappings with build ids, labels pid, tid, comm, cpu;
          a count and a period per event sampled (-sample_index=EVENT)
`

// Places the report reads; variables for the tests.
var (
	procKallsyms = "/proc/kallsyms"
	kernelNotes  = "/sys/kernel/notes"
	stdinFile    = os.Stdin
)

// runReport implements "kbench report".
func runReport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, reportUsage, "\nflags:\n")
		fs.PrintDefaults()
	}
	format := fs.String("format", "table", "output: table, script, json, folded or pprof")
	ksFile := fs.String("kallsyms", "", "kernel symbols `file`; \"none\" for none (default /proc/kallsyms when the recording's kernel build id is the running kernel's, else the build-id cache's copy)")
	hideCallchain := fs.Bool("G", false, "script: hide callchains (perf script -G)")
	implName := fs.String("impl", "btree", "map implementation: btree or list")
	debugDir := fs.String("debugdir", "", "perf's build-id cache `dir` (default ~/.debug, or SYMFS/.debug with -symfs; \"-\" for none)")
	vdsoFile := fs.String("vdso", "", "symbolize and unwind [vdso] maps with the vdso image `file` instead of kbench's own (perf uses its own; for a recording from another machine)")
	sectionCache := fs.String("cachedir", "", "keep the debug sections inflated for inline frames in `dir` for later runs (default kmapindex/sections in the user's cache directory; \"-\" for none)")
	vmlinux := fs.String("vmlinux", "", "kernel symbols from this vmlinux `file` only, as perf's -k (not with -kallsyms)")
	ignoreVmlinux := fs.Bool("ignore-vmlinux", false, "look for no vmlinux on perf's vmlinux path (perf --ignore-vmlinux)")
	symfs := fs.String("symfs", "", "look for DSO files below `dir`, as perf's --symfs (for their symbols and unwinding); with it, as in perf, the build-id cache is DIR/.debug and the kernel has no symbols but a -kallsyms file")
	outFile := fs.String("o", "", "write the output to `file` (required for pprof)")
	progress := fs.String("progress", "auto", "progress bar on stderr: auto (when stderr is a terminal), always or never")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to `file` (go tool pprof)")
	traceFile := fs.String("trace", "", "write a runtime execution trace of the run to `file` (go tool trace)")
	memProfile := fs.String("memprofile", "", "write an allocation profile of the run to `file` at its end (go tool pprof -sample_index=alloc_space)")
	// -children and -no-children, as perf's --children and --no-children:
	// the last one given wins. kbench's default is the flat table.
	children := false
	fs.BoolFunc("children", "table: add a Children column, each sample's period accumulated into its callchain's entries (perf report --children, perf's default for recordings with callchains)", func(v string) error {
		b, err := strconv.ParseBool(v)
		children = b
		return err
	})
	fs.BoolFunc("no-children", "table: the flat table, without the Children column (the default; perf report --no-children)", func(v string) error {
		b, err := strconv.ParseBool(v)
		children = !b
		return err
	})
	noBranchStack := fs.Bool("no-branch-stack", false, "table: count samples, not branch-stack entries, for a recording with branch stacks (perf report --no-branch-stack)")
	sortKeys := fs.String("sort", "", "table: sort and group rows by these perf report --sort `keys`: comm, pid, dso, sym, cpu (default dso,sym)")
	var filter attrib.Filter
	fs.Func("pid", "only threads of these `pids` (perf --pid; comma list)", intList(&filter.Pids))
	fs.Func("tid", "only these `tids` (perf --tid)", intList(&filter.Tids))
	fs.Func("comm", "only threads named one of these `comms` (perf --comms)", strList(&filter.Comms))
	fs.Func("cpu", "only samples on these `cpus` (perf --cpu: 0,2-3)", cpuList(&filter.CPUs))
	fs.Func("time", "only samples in these time `slices` (perf --time: start,end in seconds, either may be empty, several separated by spaces; or percents of the recording's time: 10%/2, 0%-10%,30%-40%, 50%)", func(v string) error {
		filter.TimeText = v
		if strings.Contains(v, "%") {
			return nil // read with the recording's first and last sample times (attrib.Run)
		}
		_, err := attrib.ParseTimes(v, 0, 0)
		return err
	})
	fs.Func("dso", "only samples in these `dsos`, short or long names (perf --dsos)", strList(&filter.DSOs))
	fs.Func("sym", "only samples in these `symbols`, names or 0xSTART (perf --symbols)", strList(&filter.Syms))
	input := fs.String("i", "", "the perf.data `file` (as perf's -i), instead of the FILE argument")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	usageErr := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "kbench report: "+format+"\n", a...)
		fs.Usage()
		return errUsage
	}
	files := fs.Args()
	if *input != "" {
		files = append([]string{*input}, files...) // perf's -i FILE
	}
	if len(files) != 1 {
		return usageErr("want one perf.data file, got %d", len(files))
	}
	switch *format {
	case "table", "script", "json", "folded":
	case "pprof":
		if *outFile == "" {
			return usageErr("-format pprof needs -o FILE")
		}
	default:
		return usageErr("unknown -format %q", *format)
	}
	var keys []string
	if *sortKeys != "" {
		var err error
		if keys, err = attrib.ParseSortKeys(*sortKeys); err != nil {
			return usageErr("-sort: %v", err)
		}
	}
	filtering := !reflect.DeepEqual(filter, attrib.Filter{})
	if !filtering && *format == "table" && slices.Equal(keys, []string{attrib.SortDSO, attrib.SortSym}) {
		// The default table's keys: its path, which keeps perf's tree for
		// far-apart addresses outside every map in a children table
		// (attrib's noMapOrder), and is faster.
		keys = nil
	}
	impl, err := mapset.ByName(*implName)
	if err != nil {
		return usageErr("%v", err)
	}
	switch *progress {
	case "auto", "always", "never":
	default:
		return usageErr("unknown -progress %q", *progress)
	}
	var vdso []byte
	if *vdsoFile != "" {
		var err error
		if vdso, err = readVDSO(*vdsoFile); err != nil {
			return err
		}
	}
	name := files[0]
	if *debugDir == "" && *symfs != "" {
		// symbol__config_symfs: perf's build-id cache moves to
		// SYMFS/.debug.
		*debugDir = *symfs + "/.debug"
	}
	cacheDir := *debugDir
	if cacheDir == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cacheDir = filepath.Join(home, ".debug")
		}
	} else if cacheDir == "-" {
		cacheDir = ""
	}

	for _, p := range []struct {
		file  string
		start func(io.Writer) error
		stop  func()
	}{{*cpuProfile, pprof.StartCPUProfile, pprof.StopCPUProfile}, {*traceFile, trace.Start, trace.Stop}} {
		if p.file == "" {
			continue
		}
		f, err := os.Create(p.file)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := p.start(f); err != nil {
			return err
		}
		defer p.stop()
	}
	if *memProfile != "" {
		defer writeMemProfile(*memProfile, stderr)
	}
	// Messages name standard input as openRecording's errors do.
	display := name
	if name == "-" {
		display = "standard input"
	}
	if reportOpening != nil {
		reportOpening(name)
	}
	in, err := openRecording(name)
	if err != nil {
		return err
	}
	defer in.r.Close()
	warn := func(format string, a ...any) { fmt.Fprintf(stderr, "kbench report: warning: "+format+"\n", a...) }
	ks := *ksFile
	if ks == "" && in.r.Dir() != "" {
		// perf_data__kallsyms_name: a directory's kcore_dir/kallsyms, as
		// if given with --kallsyms.
		if kc := filepath.Join(in.r.Dir(), perfdata.KcoreDirKallsyms); statOK(kc) {
			ks = kc
		}
	}
	// dso__load_kernel_sym: with no kallsyms file named, a vmlinux comes
	// first: perf's -k, else the build-id cache's and perf's vmlinux_path
	// (-ignore-vmlinux skips both of perf's own, not the cache's).
	var vmlinuxOnly string
	var vmlinuxPath []string
	switch {
	case ks != "":
	case *ignoreVmlinux:
		vmlinuxPath = []string{}
	default:
		vmlinuxOnly = *vmlinux
		vmlinuxPath = attrib.VmlinuxPath(in.r.Features().OSRelease, *symfs)
	}
	if ks == "" && *symfs != "" {
		// dso__load_kernel_sym: "do not try local files if a symfs was
		// given", only a kallsyms file named as with -kallsyms.
		ks = "none"
	}
	var ksFrom string // the kallsyms file chosen, once Run returned
	// The kallsyms choice's warnings wait for the end of the run: a
	// vmlinux found when the kernel loads makes them moot (they come from
	// the background read, hence the lock).
	var ksWarnings struct {
		sync.Mutex
		lines []string
	}
	ksWarn := func(format string, a ...any) {
		ksWarnings.Lock()
		defer ksWarnings.Unlock()
		ksWarnings.lines = append(ksWarnings.lines, fmt.Sprintf(format, a...))
	}
	chooseKs := chooseKallsyms(ks, in.r.Features(), cacheDir, ksWarn)
	if chooseKs != nil {
		choose := chooseKs
		chooseKs = func(mmapBuildID []byte) (func() (*kallsyms.List, error), string) {
			load, file := choose(mmapBuildID)
			ksFrom = file
			return load, file
		}
	}

	var out io.Writer = stdout
	var file *os.File
	if *outFile != "" {
		if file, err = os.Create(*outFile); err != nil {
			return err
		}
		out = file
	}
	fail := func(err error) error {
		if file != nil {
			removePartial(file, *outFile)
		}
		return err
	}
	bw := bufio.NewWriterSize(out, 256<<10)
	opts := attrib.Options{Impl: impl, ChooseKallsyms: chooseKs, DebugDir: *debugDir, CacheDir: *sectionCache, Symfs: *symfs, VDSO: vdso,
		Vmlinux: vmlinuxOnly, VmlinuxPath: vmlinuxPath}
	if *format == "table" && !*noBranchStack {
		opts.BranchMode = attrib.BranchModeDefault(in.r)
	}
	pipe := name == "-" || in.r.PipeMode() // perf reads "-" as a pipe
	opts.Children = *format == "table" && children && attrib.ChildrenApply(in.r, pipe)
	if keys != nil || filtering {
		opts.SortKeys = keys
		if filtering {
			opts.Filter = &filter
		}
	}
	if opts.Children {
		collectTighter() // its entries are most of its heap (gc.go)
	}
	opts.Stacks = *format == "pprof" || *format == "folded"
	// Script lines, stacks and tables by sort keys (attrib.Rows) need no
	// per-symbol counts.
	opts.NoCounts = *format == "script" || opts.Stacks || *format == "table" && (opts.SortKeys != nil || opts.Filter != nil)
	opts.NoSampleSets = *format != "json" // only JSON shows the maps' sample sets
	opts.NoMapSymCounts = true            // no output reads them by map
	opts.KernelLoaded = collectEarly
	opts.HideCallchain = *hideCallchain
	if *format == "script" {
		opts.Script = bw
		opts.FetchInsn = fetchesInsn(in.r.Features().Arch, pipe)
	}
	var bar *progressBar
	if *progress == "always" || *progress == "auto" && isTerminal(stderr) {
		bar = newProgressBar(stderr, display, in.size)
		bar.RenderBlank()
		opts.Progress = func(off int64) { bar.Set64(off) }
	}
	if reportRunning != nil {
		reportRunning(attrib.UnwindsUserStacks(in.r, opts))
	}
	res, err := attrib.Run(in.r, opts)
	if err == nil && opts.Children {
		collectRun()
	}
	if bar != nil {
		if err == nil && in.size > 0 {
			bar.Set64(in.size)
		}
		bar.Finish()
	}
	if err != nil || !strings.HasPrefix(res.KernelSymbols, "vmlinux ") {
		ksWarnings.Lock()
		for _, w := range ksWarnings.lines {
			warn("%s", w)
		}
		ksWarnings.Unlock()
	}
	if err != nil {
		bw.Flush()
		return fail(fmt.Errorf("%s: %w", display, err))
	}
	if err := in.r.FeaturesErr(); err != nil {
		warn("%s: features: %v", display, err)
	}
	for _, w := range res.Warnings {
		warn("%s: %s", display, w)
	}
	for _, w := range res.LostWarnings() {
		warn("%s: %s", display, w)
	}
	if n := res.UnknownRecords; n != 0 {
		warn("%s: %s", display, unknownEventsWarning(n))
	}
	if n := res.UnknownUserRecords; n != 0 {
		warn("%s: %s", display, unknownUserTypesWarning(n, res.UnknownUserTypes))
	}
	if !in.r.PipeMode() && in.r.Header().Data.Size == 0 && len(in.r.Files()) <= 1 {
		// perf_header__read's warning; perf 6.1 then reads no record
		// (__perf_session__process_events fails), nor does kbench. perf
		// script exits with that failure, perf report with 0; kbench
		// warns and exits 0, as it does for what perf stops at.
		warn("%s: the data size field is 0, which is unexpected: was perf record properly terminated? No record is read, as perf 6.1 reads none (perf script then fails, \"failed to process sample\", exit status 255)", display)
	}
	// perf 6.1 checks the attr size of a file's attrs section only (a
	// pipe's HEADER_ATTR records it reads whatever their size).
	for _, a := range in.r.Attrs() {
		if a.Size > perfdata.Perf61AttrSize && !in.r.PipeMode() {
			warn("%s: its perf_event_attr has %d bytes, %d more than perf 6.1 reads: perf 6.1 refuses this recording (\"file uses a more recent and unsupported ABI\"); kbench reads the fields it knows",
				display, a.Size, a.Size-perfdata.Perf61AttrSize)
			break
		}
	}
	if n := res.Stats.Compressed2; n != 0 {
		warn("%s: %s", display, compressed2Warning(n))
	}
	if ksFrom == procKallsyms && !in.knewFeatures {
		// A stream's build ids come late: check now what could not be
		// checked before.
		if rec := attrib.KernelBuildID(in.r.Features()); rec != nil {
			if run, err := runningKernelBuildID(); err != nil || !symbols.SameBuildID(rec, run) {
				warn("%s: kernel symbols came from %s, but the recording's kernel build id is %x (running kernel: %x); kernel symbols may be wrong (use -kallsyms)", display, ksFrom, rec, run)
			}
		}
	}

	switch *format {
	case "table":
		if res.TableEmpty() {
			warn("%s: no sample to show (perf: \"The %s data has no samples!\")", display, display)
		}
		err = res.WriteTable(bw)
	case "json":
		var rep *attrib.JSONReport
		if rep, err = res.JSON(); err == nil {
			err = writeJSON(bw, jsonDocument{Report: rep})
		}
	case "pprof":
		err = res.WritePprof(bw)
	case "folded":
		err = res.WriteFolded(bw)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && file != nil {
		err = file.Close()
		file = nil
	}
	if err != nil {
		return fail(fmt.Errorf("%s: writing %s output: %w", display, *format, err))
	}
	return nil
}

// unknownEventsWarning is perf 6.1's warning about n records of unknown
// type (perf_session__warn_about_errors, tools/perf/util/session.c) on one
// line, followed by what kbench does differently: perf's delivery of the
// first such record fails, so perf report prints no table ("failed to
// process sample") and perf script stops there (exit status 255), and perf
// counts only that first one ("Found 1 unknown events!" whatever n is).
func unknownEventsWarning(n uint64) string {
	return fmt.Sprintf("Found %d unknown events! "+
		"Is this an older tool processing a perf.data file generated by a more recent tool? "+
		"If that is not the case, consider reporting to linux-kernel@vger.kernel.org. "+
		"(perf 6.1 counts the first one and stops there; kbench skipped all %d)", n, n)
}

// perf61FailsAtUnknown is what perf 6.1 does at a record of a user type
// it does not know: perf_session__process_event refuses a type from
// PERF_RECORD_HEADER_MAX on (83: its last is FINISHED_INIT), and the
// session ends.
const perf61FailsAtUnknown = "perf 6.1 fails at the first (\"failed to process type\") and reports nothing"

// unknownUserTypesWarning says that n records of user types perf 6.1
// does not know were skipped.
func unknownUserTypesWarning(n uint64, types []perfdata.RecordType) string {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = strconv.Itoa(int(t))
	}
	return fmt.Sprintf("skipped %d %s of types perf 6.1 does not know (%s), as a newer perf or another tool such as simpleperf writes; %s",
		n, recordsNoun(n), strings.Join(names, ", "), perf61FailsAtUnknown)
}

// compressed2Warning says that n PERF_RECORD_COMPRESSED2 records, a type
// perf 6.1 does not know, were decompressed.
func compressed2Warning(n uint64) string {
	return fmt.Sprintf("decompressed %d PERF_RECORD_COMPRESSED2 %s (type 83, as perf 6.16 and later write); %s",
		n, recordsNoun(n), perf61FailsAtUnknown)
}

// recordsNoun is "record" or "records", for n of them.
func recordsNoun(n uint64) string {
	if n == 1 {
		return "record"
	}
	return "records"
}

// recording is an open perf.data input.
type recording struct {
	r    *perfdata.Reader
	size int64 // bytes, or -1 for a stream
	// knewFeatures says whether the features (build ids) were read
	// before the records: file mode read at random offsets.
	knewFeatures bool
}

// openRecording opens the perf.data file name, or standard input for "-":
// a regular file at random offsets, a pipe front to back.
func openRecording(name string) (*recording, error) {
	// A data size of 0 is no data, as perf 6.1 reads it.
	opts := []perfdata.Option{perfdata.WithoutUnfinishedData()}
	if name != "-" {
		r, err := perfdata.Open(name, opts...)
		if err != nil {
			return nil, err
		}
		rec := &recording{r: r, size: -1}
		if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() {
			rec.size = fi.Size()
			rec.knewFeatures = true
		} else if r.Dir() != "" {
			rec.size, rec.knewFeatures = 0, true
			for _, f := range r.Files() {
				if fi, err := os.Stat(f); err == nil {
					rec.size += fi.Size()
				}
			}
		}
		return rec, nil
	}
	f := stdinFile
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("standard input: %w", err)
	}
	if fi.Mode().IsRegular() {
		r, err := perfdata.NewFileReader(f, fi.Size(), opts...)
		if err != nil {
			return nil, fmt.Errorf("standard input: %w", err)
		}
		return &recording{r: r, size: fi.Size(), knewFeatures: true}, nil
	}
	br := stdinPeek
	if br == nil {
		br = bufio.NewReaderSize(f, stdinPeekSize)
	}
	if b, err := br.Peek(stdinPeekSize); err == io.EOF && perfdata.IsPipeModeHeader(b) {
		// The whole of a small pipe-mode recording: read as from a file
		// of its size (perfdata.Reader.DataSize sizes the caches).
		r, err := perfdata.NewFileReader(bytes.NewReader(b), int64(len(b)), opts...)
		if err != nil {
			return nil, fmt.Errorf("standard input: %w", err)
		}
		return &recording{r: r, size: int64(len(b))}, nil
	}
	r, err := perfdata.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("standard input: %w", err)
	}
	return &recording{r: r, size: -1}, nil
}

// stdinPeek is standard input's reader when it is a pipe, made by
// stdinSize before the run's memory settings with stdinPeekSize bytes
// read ahead, and then read by openRecording.
var stdinPeek *bufio.Reader

// stdinPeekSize is how much of a pipe is read before the recording is
// opened: a pipe that ends within it is known to be small.
const stdinPeekSize = 1 << 20

// stdinSize returns the size of the recording on standard input: a
// regular file's, a pipe's that ends within stdinPeekSize bytes; -1 when
// not known (a longer pipe; or one that cannot be read, whose error then
// comes from the open).
func stdinSize() int64 {
	fi, err := stdinFile.Stat()
	if err != nil {
		return -1
	}
	if fi.Mode().IsRegular() {
		return fi.Size()
	}
	if stdinPeek == nil {
		stdinPeek = bufio.NewReaderSize(stdinFile, stdinPeekSize)
	}
	if b, err := stdinPeek.Peek(stdinPeekSize); err == io.EOF {
		return int64(len(b))
	}
	return -1
}

// chooseKallsyms returns attrib.Options.ChooseKallsyms: the kernel
// symbols to use and the file they come from, given the build id of the
// kernel's MMAP2 record if any; nil for "none". An explicit file is read
// as it is. By default perf's choice (dso__find_kallsyms) by the kernel
// DSO's build id, the MMAP2's or else the header's: /proc/kallsyms when
// it is the running kernel's (or the recording has none, or has not told
// it yet), else the copy perf record left in the build-id cache
// (DIR/[kernel.kallsyms]/ID/kallsyms), else none, with a warning.
func chooseKallsyms(flagFile string, f *perfdata.Features, cacheDir string, warn func(string, ...any)) func(mmapBuildID []byte) (func() (*kallsyms.List, error), string) {
	switch flagFile {
	case "none":
		return nil
	case "":
	default:
		read := attrib.LoadKallsymsFile(flagFile)
		return func([]byte) (func() (*kallsyms.List, error), string) {
			return func() (*kallsyms.List, error) {
				ks, err := read()
				if err == nil && ks == nil {
					warn("%s: no kernel symbols in it (empty, or not kallsyms text): kernel samples print [unknown]", flagFile)
				}
				return ks, err
			}, flagFile
		}
	}
	return func(mmapBuildID []byte) (func() (*kallsyms.List, error), string) {
		rec := mmapBuildID
		if rec == nil {
			rec = attrib.KernelBuildID(f)
		}
		return defaultKallsyms(rec, cacheDir, warn)
	}
}

// defaultKallsyms is chooseKallsyms' default for the kernel build id rec
// (nil: none known).
func defaultKallsyms(rec []byte, cacheDir string, warn func(string, ...any)) (load func() (*kallsyms.List, error), from string) {
	file := procKallsyms
	if rec != nil {
		run, err := runningKernelBuildID()
		if err != nil || !symbols.SameBuildID(rec, run) {
			file = ""
			if cacheDir != "" {
				// build_id_cache__kallsyms_path: ID/kallsyms, else the
				// old layout's file ID.
				dir := filepath.Join(cacheDir, index.KernelDSO, hex.EncodeToString(rec))
				for _, cached := range []string{filepath.Join(dir, "kallsyms"), dir} {
					if st, err := os.Stat(cached); err == nil && !st.IsDir() {
						file = cached
						break
					}
				}
			}
			if file == "" {
				why := fmt.Sprintf("the running kernel's is %x", run)
				if err != nil {
					why = err.Error()
				}
				warn("the recording's kernel build id is %x and %s, and the build-id cache has no kallsyms for it: no kernel symbols (use -kallsyms FILE)", rec, why)
				return nil, ""
			}
		}
	}
	read := attrib.LoadKallsymsFile(file)
	return func() (*kallsyms.List, error) {
		ks, err := read()
		if err != nil {
			warn("%v: no kernel symbols", err)
			return nil, nil
		}
		return ks, nil
	}, file
}

// runningKernelBuildID reads the running kernel's build id from its ELF
// notes (kernelNotes).
func runningKernelBuildID() ([]byte, error) {
	b, err := os.ReadFile(kernelNotes)
	if err != nil {
		return nil, err
	}
	id := symbols.NoteBuildID(b, binary.NativeEndian)
	if id == nil {
		return nil, fmt.Errorf("%s: no GNU build id note", kernelNotes)
	}
	return id, nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// fetchesInsn reports whether perf script, run here, fetches each
// sample's instruction (arch_fetch_insn, defined only in x86 builds of
// perf) for a recording of arch: when the recording is in pipe mode or of
// this machine's architecture (uname's machine; i386 on x86_64 too).
func fetchesInsn(arch string, pipe bool) bool {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "386" {
		return false
	}
	if pipe {
		return true
	}
	host := hostMachine()
	return arch != "" && (arch == host || host == "x86_64" && arch == "i386")
}

// hostMachine is uname's machine field.
func hostMachine() string {
	_, machine := uname()
	return machine
}

// intList returns a flag.Func parser of a comma list of integers into *dst.
func intList(dst *[]int32) func(string) error {
	return func(v string) error {
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
			if err != nil {
				return fmt.Errorf("%q is not a number", f)
			}
			*dst = append(*dst, int32(n))
		}
		return nil
	}
}

// strList returns a flag.Func parser of a comma list into *dst.
func strList(dst *[]string) func(string) error {
	return func(v string) error {
		*dst = append(*dst, strings.Split(v, ",")...)
		return nil
	}
}

// cpuList returns a flag.Func parser of perf's CPU list ("0,2-3") into *dst.
func cpuList(dst *[]uint32) func(string) error {
	return func(v string) error {
		for _, f := range strings.Split(v, ",") {
			lo, hi, isRange := strings.Cut(strings.TrimSpace(f), "-")
			a, err1 := strconv.ParseUint(lo, 10, 32)
			b := a
			var err2 error
			if isRange {
				b, err2 = strconv.ParseUint(hi, 10, 32)
			}
			if err1 != nil || err2 != nil || b < a || b-a > 1<<16 {
				return fmt.Errorf("%q is not a CPU or range", f)
			}
			for c := a; c <= b; c++ {
				*dst = append(*dst, uint32(c))
			}
		}
		return nil
	}
}

// writeMemProfile writes the heap profile, allocations since the start
// included, to name; a failure is reported on stderr, not as the run's.
func writeMemProfile(name string, stderr io.Writer) {
	f, err := os.Create(name)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "kbench report: memprofile: %v\n", err)
	}
}

// maxVDSOSize bounds a -vdso file: vdso images are a few pages.
const maxVDSOSize = 16 << 20

// readVDSO reads the vdso image at path: a regular ELF file of at most
// maxVDSOSize bytes.
func readVDSO(path string) ([]byte, error) {
	f, err := regular.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-vdso: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxVDSOSize+1))
	if err != nil {
		return nil, fmt.Errorf("-vdso: %s: %w", path, err)
	}
	if len(b) > maxVDSOSize {
		return nil, fmt.Errorf("-vdso: %s: more than %d bytes: not a vdso image", path, maxVDSOSize)
	}
	if _, err := elf.NewFile(bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("-vdso: %s: not an ELF image: %w", path, err)
	}
	return b, nil
}

// statOK reports whether path can be stat'ed, perf's test for a
// directory's kcore_dir/kallsyms.
func statOK(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
