// Command kbench indexes kernel address maps the way perf does and
// compares the B-tree index with the list reference.
//
// Usage:
//
//	kbench run [CORPUS...]     build each corpus's kernel maps with both
//	                           implementations, resolve its samples, and
//	                           compare digests and speed (default: a
//	                           generated corpus of ~20,000 kernel maps,
//	                           then the embedded arm64 corpus)
//	kbench maps [-impl I] DIR  print a corpus's final kernel maps
//	kbench report FILE         perf script / perf report attribution of a perf.data file
//	kbench record [-- CMD]     sample with perf_event_open into a perf.data file
//	kbench top                 sample every CPU and resolve live, like perf top
//	kbench gen -o DIR ...      generate a corpus
//	kbench kmodsec ...         dump or write KMOD_SEC_MAP records
//	kbench capture -o DIR      snapshot this machine into a corpus
//	kbench bench, kbench plot  benchmark comparison tables and SVG plots
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

const usage = `usage: kbench <command> [arguments]

commands:
  run [-json] [-samples N] [-gen=false] [CORPUS...]
        build each corpus's kernel maps with the B-tree and the list
        reference, attribute its samples through both, and compare, each
        phase timed 5 times (default: a generated x86_64 corpus of ~20,000
        kernel maps, then the embedded 7-map arm64 one)
  maps [-impl btree|list|both] DIR
        print a corpus directory's final kernel maps in canonical form
  report [-format table|script|json|pprof] [-kallsyms FILE] [-G] [-impl I] FILE|-
        attribute every sample of a perf.data file to its map and symbol
        exactly as perf script does (table like perf report --sort dso,sym)
  record [-F HZ] [-g] [-a | -p PID] [-o FILE] [-d SECONDS] [-kmodsec] [-- CMD...]
        sample with perf_event_open and write a perf.data file that perf reads
  top [-F HZ] [-g] [-d SECONDS] [-n ROWS] [-sort KEYS] [-p PID]
        sample and resolve live (package resolver), a table like perf top
  gen -arch A -modules M -bpf B -procs P -samples S -seed X -o DIR
        generate a corpus (x86_64, arm64, ppc64le, s390x, riscv64) with a
        perf.data file that perf itself reads
  kmodsec dump|write ...
        print or make PERF_RECORD_KMOD_SEC_MAP records
  capture -o DIR [-root ROOT]
        snapshot this machine (kallsyms, modules, module sections and .ko
        files, kcore program headers, KMOD_SEC_MAP records) into a corpus
  bench [-count 6] [-benchtime T] [-maxn N] [-min-speedup X] | bench -in FILE...
        run the benchmark suite (needs the Go toolchain and this module) or
        read saved output; print a benchstat table with the implementations
        as columns and the list/btree speedups; fail below -min-speedup
  plot -in FILE... [-run run.json] -o DIR
        SVG plots (ns/op against n, log-log) from benchmark output
  version
        print the build's version (also -version)
`

// errMismatch means the implementations disagreed; the exit status is 1.
var errMismatch = errors.New("btree and list outputs differ")

func main() {
	if len(os.Args) > 1 && os.Args[1] == "report" {
		// report advises huge pages once it knows the recording's size,
		// before it opens it (whose read-ahead chunks are 3 MiB of heap),
		// and only then manages the collector: advising under startGC's
		// memory limit took the -a table's peak RSS from 64 to 81 MB. A
		// small recording's settings wait for its view: one that
		// unwinds user stacks gets huge pages too (hugeHeapMinSize).
		managed := false
		reportOpening = func(name string) {
			if wantsHugeHeap(name) {
				setUpMemory(true, startHeap, steadyGOGC)
				managed = true
			}
		}
		reportRunning = func(unwinds bool) {
			if !managed {
				setUpMemory(unwinds, smallHeap, smallGOGC)
				managed = true
			}
		}
	} else {
		setUpMemory(true, startHeap, steadyGOGC)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// reportOpening, when main sets it, runs before kbench report opens the
// recording name: the process's memory settings, which tests calling run
// do not take.
var reportOpening func(name string)

// reportRunning, when main sets it, runs before kbench report's run,
// told whether the run unwinds user stacks (attrib.UnwindsUserStacks):
// the memory settings of a recording too small for them to be set before
// it was opened (see hugeHeapMinSize).
var reportRunning func(unwinds bool)

// setUpMemory advises huge pages for the heap if huge (adviseHugeHeap),
// then manages the collector from a heap of startAt at GOGC=percent
// (startGC) unless GOGC or GOMEMLIMIT is set.
func setUpMemory(huge bool, startAt uint64, percent int) {
	if huge {
		adviseHugeHeap()
	}
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		_ = startGC(startAt, percent)
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = runRun(args[1:], stdout, stderr)
	case "maps":
		err = runMaps(args[1:], stdout, stderr)
	case "report":
		err = runReport(args[1:], stdout, stderr)
	case "record":
		err = runRecord(args[1:], stdout, stderr)
	case "top":
		err = runTop(args[1:], stdout, stderr)
	case "gen":
		err = runGen(args[1:], stdout, stderr)
	case "kmodsec":
		err = runKmodsec(args[1:], stdout, stderr)
	case "capture":
		err = runCapture(args[1:], stdout, stderr)
	case "bench":
		err = runBench(args[1:], stdout, stderr)
	case "plot":
		err = runPlot(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[1] != "help" && !strings.HasPrefix(args[1], "-") {
			// kbench help CMD: the command's own usage.
			return run([]string{args[1], "-h"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return 0
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, version())
		return 0
	default:
		fmt.Fprintf(stderr, "kbench: unknown command %q\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		// Errors from a package of the same name ("gen: …") are not
		// prefixed twice.
		fmt.Fprintf(stderr, "kbench %s: %s\n", args[0], strings.TrimPrefix(err.Error(), args[0]+": "))
		return 1
	}
}

// errUsage means a flag set already printed its complaint (exit 2);
// errHelp that it printed the usage asked for with -h (exit 0).
var (
	errUsage = errors.New("usage")
	errHelp  = errors.New("help")
)

// parseFlags parses args into fs: -h and -help print the command's usage
// and end it with exit status 0; any other flag error is a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	switch err := fs.Parse(args); {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		return errHelp
	default:
		return errUsage
	}
}

// version describes this build from its build info: the module version
// ("(devel)" for a build of a checkout) and the VCS revision, if known.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "kbench (no build info)"
	}
	v := "kbench " + bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v += " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				v += "+modified"
			}
		}
	}
	return v + " " + bi.GoVersion
}
