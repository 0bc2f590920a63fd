package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/kmapindex/kmapindex/bench/compare"
)

// modulePath is the module whose ./bench package "kbench bench" runs.
const modulePath = "github.com/kmapindex/kmapindex"

// fileList is a repeatable string flag.
type fileList []string

func (l *fileList) String() string     { return strings.Join(*l, ",") }
func (l *fileList) Set(s string) error { *l = append(*l, s); return nil }

// defaultGate is the Makefile's GATE: the index operations. End-to-end
// Ingest is dominated by decoding and symbolization and is reported, not
// gated.
const defaultGate = `^(KcoreOrder|MergeIn|FixupInsert|LoadKcore|Lookup|LookupClustered)$`

// runBench implements "kbench bench": run the benchmark suite (or read
// earlier output with -in), print the implementations side by side, the
// list/btree speedups, and gate on the speedup at the largest n.
func runBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	count := fs.Int("count", 6, "run each benchmark `n` times (benchstat needs 6 for a 95% interval)")
	benchtime := fs.String("benchtime", "0.2s", "go test -benchtime `d` (a duration, or Nx)")
	maxn := fs.Int("maxn", 10_000, "largest map count to benchmark (the suite goes up to 100000)")
	pattern := fs.String("bench", ".", "run only benchmarks matching `regexp`")
	outFile := fs.String("o", "", "save the raw go test output to `file`")
	gate := fs.String("gate", defaultGate, "gate only the benchmark families matching `regexp` (default: the index operations, as make bench-ci gates)")
	minSpeedup := fs.Float64("min-speedup", 10, "fail unless btree is at least `x` times faster than list at the largest n of every benchmark (0: no gate)")
	var inputs fileList
	fs.Var(&inputs, "in", "compare existing go test -bench output in `file` instead of running (repeatable; more files may follow the flags)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: kbench bench [-count N] [-benchtime D] [-maxn N] [-bench REGEXP] [-o FILE] [-min-speedup X]\n       kbench bench [-min-speedup X] -in FILE [FILE...]\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	usageErr := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "kbench bench: "+format+"\n", a...)
		return errUsage
	}
	switch {
	case *count < 1:
		return usageErr("-count must be >= 1")
	case *maxn < 1:
		return usageErr("-maxn must be >= 1")
	case *minSpeedup < 0:
		return usageErr("-min-speedup must be >= 0")
	case len(inputs) == 0 && fs.NArg() > 0:
		return usageErr("unexpected arguments %q (use -in FILE to compare existing output)", fs.Args())
	case len(inputs) > 0 && *outFile != "":
		return usageErr("-o saves the output of a run; it does not go with -in")
	}

	var rep *compare.Report
	var err error
	if len(inputs) > 0 {
		rep, err = compare.ReadFiles(append(inputs, fs.Args()...), nil)
	} else {
		var raw []byte
		raw, err = runGoBench(stderr, goBenchArgs(*pattern, *count, *benchtime, *maxn), *outFile)
		if err != nil {
			return err
		}
		rep, err = compare.Read([]compare.Input{{Name: "go test output", R: bytes.NewReader(raw)}}, nil)
	}
	if err != nil {
		return err
	}
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	if err := rep.WriteSpeedups(stdout); err != nil {
		return err
	}
	if *minSpeedup > 0 {
		families, err := regexp.Compile(*gate)
		if err != nil {
			return usageErr("-gate: %v", err)
		}
		if err := rep.GateFamilies(*minSpeedup, families); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\ngate: btree is at least %g× faster than list at the largest n of every benchmark\n", *minSpeedup)
	}
	return nil
}

// goBenchArgs are the arguments of "go test" for the suite.
func goBenchArgs(pattern string, count int, benchtime string, maxn int) []string {
	return []string{"test", "-run=^$", "-bench=" + pattern, "-benchmem",
		"-count=" + strconv.Itoa(count), "-benchtime=" + benchtime, "./bench/",
		"-args", "-maxn=" + strconv.Itoa(maxn)}
}

// runGoBench runs go with args in the module root, copying its output to
// progress (and to outFile, if set) as it comes, and returns the output.
func runGoBench(progress io.Writer, args []string, outFile string) ([]byte, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, errors.New("the go command is not on PATH: kbench bench runs go test (use -in FILE to compare saved output)")
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("finding the module: %w", err)
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return nil, err
	}
	// go test's stdout and stderr are copied concurrently; both reach
	// progress.
	progress = &lockedWriter{w: progress}
	var out bytes.Buffer
	sinks := []io.Writer{&out, progress}
	var f *os.File
	if outFile != "" {
		if f, err = os.Create(outFile); err != nil {
			return nil, fmt.Errorf("saving go test output: %w", err)
		}
		defer f.Close()
		sinks = append(sinks, f)
	}
	fmt.Fprintf(progress, "kbench bench: in %s: go %s\n", root, strings.Join(args, " "))
	cmd := exec.Command(goBin, args...)
	cmd.Dir = root
	cmd.Stdout = io.MultiWriter(sinks...)
	cmd.Stderr = progress
	runErr := cmd.Run()
	if f != nil {
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("saving go test output: %w", err)
		}
	}
	if runErr != nil {
		return nil, fmt.Errorf("go test: %w (see its output above)", runErr)
	}
	return out.Bytes(), nil
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// moduleRoot returns the directory at or above dir whose go.mod declares
// modulePath.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; {
		if path, ok := goModModule(filepath.Join(d, "go.mod")); ok {
			if path == modulePath {
				return d, nil
			}
			return "", fmt.Errorf("%s is module %s, not %s: run kbench bench inside the kmapindex repository (or use -in FILE)", d, path, modulePath)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod at or above %s: run kbench bench inside the kmapindex repository (or use -in FILE)", dir)
		}
		d = parent
	}
}

// goModModule returns the module path a go.mod file declares.
func goModModule(file string) (string, bool) {
	f, err := os.Open(file)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			p := ""
			if f := strings.Fields(rest); len(f) > 0 {
				p = f[0]
			}
			if uq, err := strconv.Unquote(p); err == nil {
				p = uq
			}
			return p, true
		}
	}
	return "", true
}
