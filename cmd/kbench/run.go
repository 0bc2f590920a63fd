package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/kmapindex/kmapindex/bench"
	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/corpus/gen"
)

// defaultGenerated is the corpus kbench run generates, and runs first,
// when given no corpus: an x86_64 host with 3000 modules (with section
// maps) and 20,000 BPF programs, about 20,000 kernel maps, where the
// index is meant to pay off; 40 processes and 100k samples. (A variable
// so that tests can run a smaller one.)
var defaultGenerated = gen.Params{Arch: "x86_64", Modules: 3000, BPF: 20_000, Procs: 40, Samples: 100_000, Seed: 1, Name: "generated-x86_64-large"}

// runRun implements "kbench run [CORPUS...]".
func runRun(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print results as JSON")
	nSamples := fs.Int("samples", 1_000_000, "synthetic samples to resolve per corpus without a perf.data")
	seed := fs.Uint64("seed", 1, "seed of the synthetic samples")
	withGen := fs.Bool("gen", true, "with no CORPUS, first generate and run a large x86_64 corpus (about 20,000 kernel maps)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *nSamples < 0 {
		fmt.Fprintln(stderr, "kbench run: -samples must be >= 0")
		return errUsage
	}
	var corpora []*corpus.Corpus
	if fs.NArg() == 0 && *withGen {
		// The embedded corpus has 7 maps: first a large one, generated
		// the same way every time, so that the headline is about what
		// the index is for.
		dir, err := os.MkdirTemp("", "kbench-run-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		gc := filepath.Join(dir, "generated")
		if _, err := gen.Generate(defaultGenerated, gc); err != nil {
			return err
		}
		c, err := corpus.Load(gc)
		if err != nil {
			return err
		}
		corpora = append(corpora, c)
	}
	if fs.NArg() == 0 {
		c, err := corpus.Default()
		if err != nil {
			return err
		}
		corpora = append(corpora, c)
	}
	for _, dir := range fs.Args() {
		c, err := corpus.Load(dir)
		if err != nil {
			return err
		}
		corpora = append(corpora, c)
	}
	var results []bench.RunResult
	identical := true
	for _, c := range corpora {
		opts := bench.RunOptions{Samples: *nSamples, Seed: *seed}
		var bar *progressBar
		if isTerminal(stderr) {
			opts.Progress = func(impl string, off, size int64) {
				if bar == nil {
					bar = newProgressBar(stderr, impl, size)
				}
				bar.Describe(impl)
				bar.Set64(off)
			}
		}
		r, err := bench.Run(c, opts)
		if bar != nil {
			bar.Finish()
		}
		if err != nil {
			return err
		}
		results = append(results, r)
		identical = identical && r.Identical
		if !*asJSON {
			printRun(stdout, r)
		}
	}
	if *asJSON {
		if err := writeJSON(stdout, jsonDocument{Run: results}); err != nil {
			return err
		}
	}
	if !identical {
		return errMismatch
	}
	return nil
}

func printRun(w io.Writer, r bench.RunResult) {
	fmt.Fprintf(w, "corpus %s: %d kernel maps, %d samples (%s), %d [unknown]\n", r.Corpus, r.Maps, r.Samples, r.Source, r.Unknown)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "impl\tbuild (median of %d, range)\tresolve (median, range)\tsamples/s\tmaps sha256\tattribution sha256\n", bench.Rounds)
	for _, im := range r.Impls {
		blo, bhi := bench.Spread(im.BuildRuns)
		rlo, rhi := bench.Spread(im.ResolveRuns)
		fmt.Fprintf(tw, "%s\t%v (%v–%v)\t%v (%v–%v)\t%.3g\t%s\t%s\n", im.Impl, round(im.Build), round(blo), round(bhi),
			round(im.Resolve), round(rlo), round(rhi), im.SamplesPerSec, im.MapsDigest[:16], im.AttribDigest[:16])
	}
	tw.Flush()
	verdict := "identical"
	if !r.Identical {
		verdict = "DIFFERENT"
	}
	fmt.Fprintf(w, "verdict: %s; btree over list (medians, implementations alternating): %.1fx resolving, %.1fx building the kernel maps\n", verdict, r.Speedup, r.BuildSpeedup)
	if r.BuildSpeedup < 1 || r.Speedup < 1 {
		fmt.Fprintf(w, "note: with %d maps the list reference is as fast or faster: a few pointer hops per step beat a B-tree search; the B-tree pays off from about a thousand maps (see BENCHMARKS.md)\n", r.Maps)
	}
	fmt.Fprintln(w)
}

// round shortens a duration for the table.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(100 * time.Nanosecond)
	}
}
