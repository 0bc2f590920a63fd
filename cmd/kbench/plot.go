package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kmapindex/kmapindex/bench/compare"
	"github.com/kmapindex/kmapindex/bench/plot"
)

// runPlot implements "kbench plot": one log-log SVG per benchmark family
// (time per op against n, one series per implementation, with confidence
// intervals as error bars) from go test -bench output, and a bar chart of
// resolve throughput from "kbench run -json" output.
func runPlot(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var inputs fileList
	fs.Var(&inputs, "in", "go test -bench output `file` (repeatable; more files may follow the flags)")
	runFile := fs.String("run", "", "\"kbench run -json\" output `file`: plot throughput per corpus and implementation")
	dir := fs.String("o", ".", "write the SVG files into `dir`")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: kbench plot [-o DIR] [-run RUN.json] [-in FILE [FILE...]]\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if len(inputs) == 0 && fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kbench plot: unexpected arguments %q (use -in FILE)\n", fs.Args())
		return errUsage
	}
	if len(inputs) == 0 && *runFile == "" {
		fmt.Fprintln(stderr, "kbench plot: nothing to plot: give -in FILE and/or -run FILE")
		return errUsage
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	if len(inputs) > 0 {
		rep, err := compare.ReadFiles(append(inputs, fs.Args()...), nil)
		if err != nil {
			return err
		}
		plots, err := familyPlots(rep, stderr)
		if err != nil {
			return err
		}
		for _, fp := range plots {
			if err := writeSVG(stdout, filepath.Join(*dir, fileName(fp.family)+".svg"), func(w io.Writer) error { return plot.LogLog(w, fp.plot) }); err != nil {
				return fmt.Errorf("%s: %w", fp.family, err)
			}
		}
	}
	if *runFile != "" {
		c, err := throughputChart(*runFile)
		if err != nil {
			return err
		}
		if err := writeSVG(stdout, filepath.Join(*dir, "throughput.svg"), func(w io.Writer) error { return plot.Bars(w, c) }); err != nil {
			return err
		}
	}
	return nil
}

type familyPlot struct {
	family string
	plot   plot.Plot
}

// familyPlots makes one plot per benchmark family of the sec/op table:
// x is n, y the median with its confidence interval, a series per
// implementation. Families without n= cannot go on a log axis and are
// skipped with a note.
func familyPlots(rep *compare.Report, stderr io.Writer) ([]familyPlot, error) {
	t := rep.Table(compare.TimeUnit)
	if t == nil {
		return nil, fmt.Errorf("no %s results to plot", compare.TimeUnit)
	}
	var out []familyPlot
	index := make(map[string]int)
	seen := make(map[string]bool) // family, impl, n
	for _, row := range t.Rows {
		if row.N <= 0 {
			fmt.Fprintf(stderr, "kbench plot: %s has no n= key; not plotted\n", row.Name)
			continue
		}
		family := plotFamily(row)
		i, ok := index[family]
		if !ok {
			i = len(out)
			index[family] = i
			fp := familyPlot{family: family, plot: plot.Plot{
				Title:  family + ": time per operation",
				XLabel: "n (maps)",
				YLabel: "time per op (s), median and " + fmt.Sprintf("%.0f%%", 100*rep.Confidence) + " CI",
			}}
			for _, impl := range t.Impls {
				fp.plot.Series = append(fp.plot.Series, plot.Series{Name: impl})
			}
			out = append(out, fp)
		}
		for j, c := range row.Cells {
			if c == nil {
				continue
			}
			key := fmt.Sprint(family, "\x00", c.Impl, "\x00", row.N)
			if seen[key] {
				fmt.Fprintf(stderr, "kbench plot: %s impl=%s: more than one result at n=%d (GOMAXPROCS?); plotting the first\n", row.Name, c.Impl, row.N)
				continue
			}
			seen[key] = true
			pt := plot.Point{X: float64(row.N), Y: c.Summary.Center}
			if c.Summary.Lo > 0 && c.Summary.Hi >= c.Summary.Lo {
				pt.Lo, pt.Hi = c.Summary.Lo, c.Summary.Hi
			}
			s := &out[i].plot.Series[j]
			s.Points = append(s.Points, pt)
		}
	}
	// Drop implementations a family does not have.
	for i := range out {
		var ss []plot.Series
		for _, s := range out[i].plot.Series {
			if len(s.Points) > 0 {
				ss = append(ss, s)
			}
		}
		out[i].plot.Series = ss
	}
	return out, nil
}

// throughputChart reads "kbench run -json" output: resolve throughput per
// corpus (groups) and implementation (series).
func throughputChart(file string) (plot.BarChart, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return plot.BarChart{}, err
	}
	var doc jsonDocument
	if err := json.Unmarshal(data, &doc); err != nil || doc.Schema != jsonSchema || doc.Run == nil {
		if err == nil {
			err = fmt.Errorf("schema %q with %d runs, want %s with runs", doc.Schema, len(doc.Run), jsonSchema)
		}
		return plot.BarChart{}, fmt.Errorf("%s: not kbench run -json output: %w", file, err)
	}
	runs := doc.Run
	c := plot.BarChart{Title: "resolve throughput", YLabel: "samples/s"}
	series := make(map[string]int)
	for g, r := range runs {
		c.Groups = append(c.Groups, r.Corpus)
		for _, im := range r.Impls {
			i, ok := series[im.Impl]
			if !ok {
				i = len(c.Series)
				series[im.Impl] = i
				c.Series = append(c.Series, plot.BarSeries{Name: im.Impl})
			}
			s := &c.Series[i]
			for len(s.Values) <= g {
				s.Values = append(s.Values, 0)
			}
			s.Values[g] = im.SamplesPerSec
		}
	}
	for i := range c.Series {
		for len(c.Series[i].Values) < len(c.Groups) {
			c.Series[i].Values = append(c.Series[i].Values, 0)
		}
	}
	if len(c.Groups) == 0 {
		return c, fmt.Errorf("%s: no corpora", file)
	}
	return c, nil
}

// writeSVG writes one file with draw and prints its name.
func writeSVG(stdout io.Writer, path string, draw func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := draw(f); err != nil {
		removePartial(f, path)
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, path)
	return nil
}

// plotFamily is the plot a row goes on: its benchmark family and its
// sub-name keys other than n= (and impl=, already gone), as in
// "ConcurrentFind/updates=0/readers=1"; the GOMAXPROCS suffix is dropped.
func plotFamily(row *compare.Row) string {
	name := row.Name
	if i := strings.LastIndexByte(name, '-'); i > 0 && strings.Trim(name[i+1:], "0123456789") == "" {
		name = name[:i]
	}
	parts := []string{row.Bench}
	for _, p := range strings.Split(name, "/")[1:] {
		if !strings.HasPrefix(p, "n=") {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "/")
}

// fileName makes a benchmark family name safe as a file name.
func fileName(family string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, family)
}
