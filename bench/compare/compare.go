// Package compare compares Go benchmark results between implementations.
//
// It reads "go test -bench" output whose benchmark names carry an impl=…
// sub-name key (BenchmarkLookup/impl=btree/n=1000-2), groups the results
// the way benchstat -col /impl does (rows are the full benchmark names with
// impl= projected out, columns are implementations, one table per unit),
// summarizes each cell with the same statistics as benchstat (median and
// 95% confidence interval, Mann-Whitney U test against the baseline
// implementation), and derives speedups and a pass/fail gate from them.
//
// Parsing, projection and statistics are those of golang.org/x/perf
// (benchfmt, benchproc, benchmath, benchunit), so every center, interval,
// delta and p-value equals what benchstat prints for the same input.
package compare

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchproc"
)

// Default implementation names: the list reference is the baseline every
// other implementation is compared with, and the B-tree is the target of
// speedups and of the gate.
const (
	DefaultBaseline = "list"
	DefaultTarget   = "btree"
)

// TimeUnit is the tidied unit of ns/op, the unit of speedups and the gate.
const TimeUnit = "sec/op"

// Options configure Read. The zero value (or a nil *Options) means the
// defaults: baseline "list", target "btree", 95% confidence and
// benchmath.DefaultThresholds.
type Options struct {
	Baseline   string                // baseline implementation (default DefaultBaseline)
	Target     string                // implementation of speedups and the gate (default DefaultTarget)
	Confidence float64               // confidence level of intervals (default 0.95)
	Thresholds *benchmath.Thresholds // statistical thresholds (default DefaultThresholds)
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Baseline == "" {
		r.Baseline = DefaultBaseline
	}
	if r.Target == "" {
		r.Target = DefaultTarget
	}
	if r.Confidence == 0 {
		r.Confidence = 0.95
	}
	if r.Thresholds == nil {
		t := benchmath.DefaultThresholds
		r.Thresholds = &t
	}
	return r
}

// Input is one named stream of benchmark output.
type Input struct {
	Name string // file name, for positions in messages
	R    io.Reader
}

// Report is the comparison of every benchmark in the inputs.
type Report struct {
	Baseline, Target string
	Confidence       float64
	// Tables holds one table per unit, in order of first appearance
	// (sec/op first for go test output).
	Tables []*Table
	// Warnings are input lines that could not be parsed.
	Warnings []string
}

// Table holds the results of one unit.
type Table struct {
	Unit  string   // tidied unit: sec/op, B/op, allocs/op, sec/map, …
	Impls []string // columns: the baseline first (if present), then others in input order
	Rows  []*Row
}

// Row is one benchmark (its full name without impl=) across implementations.
type Row struct {
	Name  string  // e.g. "Lookup/n=1000-2"
	Bench string  // benchmark family, e.g. "Lookup"
	N     int     // value of the n= key; 0 if absent
	Cells []*Cell // parallel to Table.Impls; nil where an implementation has no results
}

// Cell summarizes one implementation's samples of one benchmark and unit.
type Cell struct {
	Impl    string
	Values  []float64
	Summary benchmath.Summary // Center, Lo, Hi of the confidence interval
	// Compared is true when the cell was compared with the baseline cell
	// of its row (it is not the baseline and the baseline has results).
	Compared   bool
	Comparison benchmath.Comparison // P, N1, N2, Alpha
	Delta      string               // benchstat's delta: "-98.12%", or "~" if not significant
}

// ReadFiles reads benchmark output from files; see Read.
func ReadFiles(paths []string, opts *Options) (*Report, error) {
	var inputs []Input
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		defer f.Close()
		inputs = append(inputs, Input{Name: p, R: f})
	}
	return Read(inputs, opts)
}

// Read reads "go test -bench" output from the inputs, pools the samples of
// identical benchmarks across them, and compares the implementations.
// Results without an impl= key are ignored.
func Read(inputs []Input, opts *Options) (*Report, error) {
	o := opts.withDefaults()
	var pp benchproc.ProjectionParser
	tableBy, unitField, err := pp.ParseWithUnit("", nil)
	if err != nil {
		return nil, fmt.Errorf("compare: unit projection: %w", err)
	}
	// .fullname in one projection excludes the sub-name keys other
	// projections of the same parser use: rows are names without impl=.
	rowBy, err := pp.Parse(".fullname", nil)
	if err != nil {
		return nil, fmt.Errorf("compare: row projection: %w", err)
	}
	colBy, err := pp.Parse("/impl", nil)
	if err != nil {
		return nil, fmt.Errorf("compare: column projection: %w", err)
	}
	// A separate parser, so that /n does not leave .fullname.
	var aux benchproc.ProjectionParser
	nameBy, err := aux.Parse(".name,/n", nil)
	if err != nil {
		return nil, fmt.Errorf("compare: name projection: %w", err)
	}
	nameField, nField := nameBy.Fields()[0], nameBy.Fields()[1]
	implField := colBy.Fields()[0]

	type cellKey struct{ unit, row, col benchproc.Key }
	values := make(map[cellKey][]float64)
	var unitKeys []benchproc.Key
	rowsOf := make(map[benchproc.Key][]benchproc.Key) // per unit, in first-seen order
	colsOf := make(map[benchproc.Key][]benchproc.Key)
	seenRow := make(map[[2]benchproc.Key]bool)
	seenCol := make(map[[2]benchproc.Key]bool)
	rowInfo := make(map[benchproc.Key]benchproc.Key) // row → (.name, /n)
	units := make(benchfmt.UnitMetadataMap)
	rep := &Report{Baseline: o.Baseline, Target: o.Target, Confidence: o.Confidence}
	results := 0

	for _, in := range inputs {
		r := benchfmt.NewReader(in.R, in.Name)
		for r.Scan() {
			switch rec := r.Result().(type) {
			case *benchfmt.SyntaxError:
				rep.Warnings = append(rep.Warnings, rec.Error())
			case *benchfmt.Result:
				row, col := rowBy.Project(rec), colBy.Project(rec)
				if col.Get(implField) == "" {
					continue
				}
				results++
				if _, ok := rowInfo[row]; !ok {
					rowInfo[row] = nameBy.Project(rec)
				}
				for i, uk := range tableBy.ProjectValues(rec) {
					if _, ok := rowsOf[uk]; !ok {
						rowsOf[uk] = nil
						unitKeys = append(unitKeys, uk)
					}
					if k := [2]benchproc.Key{uk, row}; !seenRow[k] {
						seenRow[k] = true
						rowsOf[uk] = append(rowsOf[uk], row)
					}
					if k := [2]benchproc.Key{uk, col}; !seenCol[k] {
						seenCol[k] = true
						colsOf[uk] = append(colsOf[uk], col)
					}
					ck := cellKey{uk, row, col}
					values[ck] = append(values[ck], rec.Values[i].Value)
				}
			}
		}
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("compare: reading %s: %w", in.Name, err)
		}
		for k, v := range r.Units() {
			units[k] = v
		}
	}
	if results == 0 {
		return nil, errors.New("compare: no benchmark results with an impl= key in the input")
	}

	for _, uk := range unitKeys {
		unit := uk.Get(unitField)
		assumption := units.GetAssumption(unit) // AssumeNothing unless the input says otherwise
		t := &Table{Unit: unit}
		cols := colsOf[uk]
		// Baseline first, the rest in input order.
		for _, c := range cols {
			if c.Get(implField) == o.Baseline {
				t.Impls = append(t.Impls, o.Baseline)
			}
		}
		for _, c := range cols {
			if name := c.Get(implField); name != o.Baseline {
				t.Impls = append(t.Impls, name)
			}
		}
		colKey := make(map[string]benchproc.Key, len(cols))
		for _, c := range cols {
			colKey[c.Get(implField)] = c
		}
		for _, rk := range rowsOf[uk] {
			info := rowInfo[rk]
			row := &Row{Name: rk.StringValues(), Bench: info.Get(nameField), Cells: make([]*Cell, len(t.Impls))}
			if s := info.Get(nField); s != "" {
				n, err := strconv.Atoi(s)
				if err != nil {
					return nil, fmt.Errorf("compare: benchmark %s: n=%q is not an integer", row.Name, s)
				}
				row.N = n
			}
			var base *benchmath.Sample
			for i, impl := range t.Impls {
				vs, ok := values[cellKey{uk, rk, colKey[impl]}]
				if !ok {
					continue
				}
				s := benchmath.NewSample(vs, o.Thresholds)
				c := &Cell{Impl: impl, Values: vs, Summary: assumption.Summary(s, o.Confidence)}
				if impl == o.Baseline {
					base = s
				} else if base != nil {
					c.Compared = true
					c.Comparison = assumption.Compare(base, s)
					c.Delta = c.Comparison.FormatDelta(row.Cells[0].Summary.Center, c.Summary.Center)
				}
				row.Cells[i] = c
			}
			t.Rows = append(t.Rows, row)
		}
		rep.Tables = append(rep.Tables, t)
	}
	return rep, nil
}

// Table returns the table of a tidied unit (sec/op, B/op, …), or nil.
func (r *Report) Table(unit string) *Table {
	for _, t := range r.Tables {
		if t.Unit == unit {
			return t
		}
	}
	return nil
}

// Cell returns the row's cell of an implementation, or nil.
func (t *Table) Cell(row *Row, impl string) *Cell {
	for i, name := range t.Impls {
		if name == impl {
			return row.Cells[i]
		}
	}
	return nil
}
