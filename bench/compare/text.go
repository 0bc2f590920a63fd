package compare

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/perf/benchunit"
)

// WriteText writes one table per unit, benchstat style: a row per
// benchmark, a column per implementation (the baseline first) holding the
// median ± the confidence interval, and for every other implementation the
// change from the baseline ("~" when not significant) with its p-value and
// sample counts. Warnings (too few samples, all samples equal, …) are
// footnotes under each table.
func (r *Report) WriteText(w io.Writer) error {
	for i, t := range r.Tables {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := r.writeTable(w, t); err != nil {
			return err
		}
	}
	for _, msg := range r.Warnings {
		if _, err := fmt.Fprintf(w, "warning: %s\n", msg); err != nil {
			return err
		}
	}
	return nil
}

// Sub-columns of an implementation's column group.
const (
	subCenter = iota
	subCI
	subDelta
	subP
	subNotes
	nSub
)

func (r *Report) writeTable(w io.Writer, t *Table) error {
	var notes []string
	noteIdx := make(map[string]int)
	footnote := func(errs ...[]error) string {
		var marks []string
		for _, es := range errs {
			for _, e := range es {
				s := e.Error()
				i, ok := noteIdx[s]
				if !ok {
					notes = append(notes, s)
					i = len(notes)
					noteIdx[s] = i
				}
				marks = append(marks, superscript(i))
			}
		}
		return strings.Join(marks, " ")
	}

	// Text of every sub-cell, then the widths of every sub-column.
	cls := benchunit.ClassOf(t.Unit)
	text := make([][][nSub]string, len(t.Rows))
	widths := make([][nSub]int, len(t.Impls))
	labelW := utf8.RuneCountInString(t.Unit)
	for i, row := range t.Rows {
		labelW = max(labelW, utf8.RuneCountInString(row.Name))
		var centers []float64
		for _, c := range row.Cells {
			if c != nil {
				centers = append(centers, c.Summary.Center)
			}
		}
		scaler := benchunit.CommonScale(centers, cls)
		text[i] = make([][nSub]string, len(t.Impls))
		for j, c := range row.Cells {
			if c == nil {
				continue
			}
			s := &text[i][j]
			s[subCenter] = scaler.Format(c.Summary.Center)
			s[subCI] = c.Summary.PctRangeString()
			var warns [][]error
			warns = append(warns, c.Summary.Warnings)
			if c.Compared {
				s[subDelta] = c.Delta
				s[subP] = "(" + c.Comparison.String() + ")"
				warns = append(warns, c.Comparison.Warnings)
			}
			s[subNotes] = footnote(warns...)
			for k := range nSub {
				widths[j][k] = max(widths[j][k], utf8.RuneCountInString(s[k]))
			}
		}
	}

	group := func(j int, s [nSub]string) string {
		wd := widths[j]
		var b strings.Builder
		b.WriteString(pad(s[subCenter], wd[subCenter], true))
		if s[subCenter] == "" {
			b.WriteString("   ")
		} else {
			b.WriteString(" ± ")
		}
		b.WriteString(pad(s[subCI], wd[subCI], true))
		if wd[subDelta] > 0 {
			b.WriteString("  " + pad(s[subDelta], wd[subDelta], true))
			b.WriteString(" " + pad(s[subP], wd[subP], false))
		}
		if wd[subNotes] > 0 {
			b.WriteString(" " + pad(s[subNotes], wd[subNotes], false))
		}
		return b.String()
	}
	groupW := make([]int, len(t.Impls))
	for j := range t.Impls {
		groupW[j] = utf8.RuneCountInString(group(j, [nSub]string{}))
		groupW[j] = max(groupW[j], utf8.RuneCountInString(header(r, t, j)))
	}

	var b strings.Builder
	b.WriteString(pad(t.Unit, labelW, false))
	for j := range t.Impls {
		b.WriteString(" │ " + center(header(r, t, j), groupW[j]))
	}
	b.WriteString(" │\n")
	for i, row := range t.Rows {
		b.WriteString(pad(row.Name, labelW, false))
		for j := range t.Impls {
			b.WriteString(" │ " + pad(group(j, text[i][j]), groupW[j], false))
		}
		b.WriteString(" │\n")
	}
	for i, n := range notes {
		fmt.Fprintf(&b, "%s %s\n", superscript(i+1), n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// header is the title of column group j: the implementation, and for
// compared columns what they are compared with.
func header(r *Report, t *Table, j int) string {
	impl := t.Impls[j]
	if j > 0 && t.Impls[0] == r.Baseline {
		return impl + " vs " + r.Baseline
	}
	return impl
}

func pad(s string, w int, right bool) string {
	n := w - utf8.RuneCountInString(s)
	if n <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", n) + s
	}
	return s + strings.Repeat(" ", n)
}

func center(s string, w int) string {
	n := w - utf8.RuneCountInString(s)
	if n <= 0 {
		return s
	}
	return strings.Repeat(" ", n/2) + s + strings.Repeat(" ", n-n/2)
}

var superDigits = []rune("⁰¹²³⁴⁵⁶⁷⁸⁹")

func superscript(i int) string {
	var out []rune
	for _, d := range strconv.Itoa(i) {
		out = append(out, superDigits[d-'0'])
	}
	return string(out)
}

// WriteSpeedups writes the baseline/target speedup of every benchmark, one
// line each: family, n, ratio and p-value.
func (r *Report) WriteSpeedups(w io.Writer) error {
	sp := r.Speedups()
	if len(sp) == 0 {
		_, err := fmt.Fprintf(w, "no benchmarks with both impl=%s and impl=%s %s results\n", r.Baseline, r.Target, TimeUnit)
		return err
	}
	rows := [][4]string{{"benchmark", "n", "speedup " + r.Baseline + "/" + r.Target, "p"}}
	for _, s := range sp {
		rows = append(rows, [4]string{s.Bench, strconv.Itoa(s.N), FormatRatio(s.Ratio), fmt.Sprintf("%.3f", s.P)})
	}
	var wd [4]int
	for _, row := range rows {
		for k, c := range row {
			wd[k] = max(wd[k], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		b.WriteString(pad(row[0], wd[0], false))
		for k := 1; k < len(row); k++ {
			b.WriteString("  " + pad(row[k], wd[k], true))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FormatRatio formats a speedup with three significant digits: "0.812×",
// "1.25×", "12.3×", "1234×".
func FormatRatio(q float64) string {
	switch {
	case q >= 100:
		return fmt.Sprintf("%.0f×", q)
	case q >= 10:
		return fmt.Sprintf("%.1f×", q)
	case q >= 1:
		return fmt.Sprintf("%.2f×", q)
	}
	return fmt.Sprintf("%.3g×", q)
}
