package compare

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// Speedup is how many times faster the target implementation is than the
// baseline on one benchmark: the ratio of their median times per op.
type Speedup struct {
	Bench string  // benchmark family, e.g. "Lookup"
	N     int     // value of the n= key; 0 if absent
	Ratio float64 // baseline median / target median (list/btree); +Inf if the target took no time
	P     float64 // Mann-Whitney U p-value of the difference
}

// Speedups returns the baseline/target speedup of every benchmark (in
// sec/op) that has results for both, in input order.
func (r *Report) Speedups() []Speedup {
	t := r.Table(TimeUnit)
	if t == nil {
		return nil
	}
	var out []Speedup
	for _, row := range t.Rows {
		base, tgt := t.Cell(row, r.Baseline), t.Cell(row, r.Target)
		if base == nil || tgt == nil || !tgt.Compared {
			continue
		}
		out = append(out, Speedup{Bench: row.Bench, N: row.N, Ratio: ratio(base.Summary.Center, tgt.Summary.Center), P: tgt.Comparison.P})
	}
	return out
}

func ratio(base, target float64) float64 {
	switch {
	case base == target:
		return 1
	case target == 0:
		return math.Inf(1)
	}
	return base / target
}

// Gate checks that, in every benchmark family, the target implementation
// is at least minRatio times faster (in median sec/op) than the baseline
// at the largest n present in the input for that family. It also fails
// when either implementation has no results at that n, or when the input
// has no time results at all. The ratio alone decides; the p-value is
// reported with a failure but not required to be significant. All failures
// are reported, joined.
func (r *Report) Gate(minRatio float64) error { return r.GateFamilies(minRatio, nil) }

// GateFamilies is Gate for the benchmark families whose name match
// matches (all when nil); the others are reported but not gated, as
// end-to-end benchmarks dominated by work outside the index are.
func (r *Report) GateFamilies(minRatio float64, match *regexp.Regexp) error {
	t := r.Table(TimeUnit)
	if t == nil || len(t.Rows) == 0 {
		return fmt.Errorf("gate: no %s results", TimeUnit)
	}
	var families []string
	largest := make(map[string]int)
	for _, row := range t.Rows {
		if match != nil && !match.MatchString(row.Bench) {
			continue
		}
		n, ok := largest[row.Bench]
		if !ok {
			families = append(families, row.Bench)
		}
		if !ok || row.N > n {
			largest[row.Bench] = row.N
		}
	}
	var errs []error
	for _, fam := range families {
		n := largest[fam]
		for _, row := range t.Rows {
			if row.Bench != fam || row.N != n {
				continue
			}
			base, tgt := t.Cell(row, r.Baseline), t.Cell(row, r.Target)
			var missing []string
			if tgt == nil {
				missing = append(missing, r.Target)
			}
			if base == nil {
				missing = append(missing, r.Baseline)
			}
			if len(missing) > 0 {
				errs = append(errs, fmt.Errorf("%s: no results for impl=%s", row.Name, strings.Join(missing, ", impl=")))
				continue
			}
			if q := ratio(base.Summary.Center, tgt.Summary.Center); !(q >= minRatio) {
				errs = append(errs, fmt.Errorf("%s: %s is %s faster than %s, want ≥ %g× (p=%.3f)",
					row.Name, r.Target, FormatRatio(q), r.Baseline, minRatio, tgt.Comparison.P))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("speedup gate (%s ≥ %g× faster than %s) failed:\n%w", r.Target, minRatio, r.Baseline, errors.Join(errs...))
	}
	return nil
}
