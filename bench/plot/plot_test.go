package plot

import (
	"bytes"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/internal/svgtest"
)

func loglog(t *testing.T, p Plot) *svgtest.Node {
	t.Helper()
	var b bytes.Buffer
	if err := LogLog(&b, p); err != nil {
		t.Fatal(err)
	}
	return svgtest.Parse(t, b.Bytes())
}

// points returns the coordinates of a polyline.
func points(t *testing.T, pl *svgtest.Node) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, f := range strings.Fields(pl.Attr("points")) {
		x, y, ok := strings.Cut(f, ",")
		px, err1 := strconv.ParseFloat(x, 64)
		py, err2 := strconv.ParseFloat(y, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("bad point %q", f)
		}
		out = append(out, [2]float64{px, py})
	}
	return out
}

var lookup = Plot{
	Title:  "Lookup <time> & n",
	XLabel: "n (maps)",
	YLabel: "time per op (s)",
	Series: []Series{
		{Name: "list", Points: []Point{{X: 100, Y: 240e-9, Lo: 230e-9, Hi: 250e-9}, {X: 1000, Y: 6.3e-6}, {X: 10000, Y: 54e-6}}},
		// Out of order on purpose: the line is drawn in x order.
		{Name: "btree", Points: []Point{{X: 10000, Y: 1.5e-6}, {X: 100, Y: 350e-9}, {X: 1000, Y: 1.4e-6}}},
		{Name: "snapshot", Points: []Point{{X: 100, Y: 125e-9}, {X: 1000, Y: 225e-9}, {X: 10000, Y: 240e-9}}},
	},
}

func TestLogLog(t *testing.T) {
	root := loglog(t, lookup)
	lines := root.All("polyline")
	if len(lines) != len(lookup.Series) {
		t.Fatalf("%d polylines, want one per series (%d)", len(lines), len(lookup.Series))
	}
	colors := map[string]bool{}
	for i, pl := range lines {
		pts := points(t, pl)
		if len(pts) != len(lookup.Series[i].Points) {
			t.Errorf("series %d: %d points, want %d", i, len(pts), len(lookup.Series[i].Points))
		}
		for j := 1; j < len(pts); j++ {
			if pts[j][0] <= pts[j-1][0] {
				t.Errorf("series %d: x pixels not increasing: %v", i, pts)
			}
		}
		colors[pl.Attr("stroke")] = true
	}
	if len(colors) != len(lines) {
		t.Errorf("series colours not distinct: %v", colors)
	}
	// Log scale: equal ratios are equal distances, and larger values are
	// higher (smaller y pixels).
	pts := points(t, lines[0])
	if dx1, dx2 := pts[1][0]-pts[0][0], pts[2][0]-pts[1][0]; math.Abs(dx1-dx2) > 0.02 {
		t.Errorf("decades 100→1k and 1k→10k are %g and %g pixels wide", dx1, dx2)
	}
	if !(pts[0][1] > pts[1][1] && pts[1][1] > pts[2][1]) {
		t.Errorf("increasing y not drawn upward: %v", pts)
	}
	texts := strings.Join(root.Texts(), "|")
	for _, want := range []string{"Lookup <time> & n", "n (maps)", "time per op (s)", "list", "btree", "snapshot", "|100|", "|1k|", "|10k|", "100n", "1µ", "10µ", "100µ"} {
		if !strings.Contains("|"+texts+"|", want) {
			t.Errorf("no text %q in %q", want, texts)
		}
	}
	if n := len(root.All("path")); n != 1 {
		t.Errorf("%d error bars, want 1", n)
	}
	// Markers: distinct shapes for the first series.
	shapes := map[string]int{}
	root.Walk(func(n *svgtest.Node) {
		if n.Attr("class") == "marker" {
			shapes[n.XMLName.Local]++
		}
	})
	if shapes["circle"] == 0 || shapes["rect"] == 0 || shapes["polygon"] == 0 {
		t.Errorf("marker shapes %v, want circles, squares and polygons", shapes)
	}
}

func TestLogScale(t *testing.T) {
	for _, tc := range []struct {
		vals   []float64
		d0, d1 int
	}{
		{[]float64{100, 10000}, 2, 4},
		{[]float64{150, 9000}, 2, 4},
		{[]float64{1e-7, 3e-5}, -7, -4},
		{[]float64{42}, 1, 2}, // one value: its decade
		{[]float64{1000}, 3, 4},
		{[]float64{0.5, 0.5}, -1, 0},
	} {
		s := newLogScale(tc.vals, 0, 100)
		if s.d0 != tc.d0 || s.d1 != tc.d1 {
			t.Errorf("%v: decades [%d, %d], want [%d, %d]", tc.vals, s.d0, s.d1, tc.d0, tc.d1)
		}
		prev := math.Inf(-1)
		for _, v := range []float64{math.Pow(10, float64(tc.d0)), tc.vals[0], tc.vals[len(tc.vals)-1], math.Pow(10, float64(tc.d1))} {
			p := s.pos(v)
			if p < prev-1e-9 || p < -1e-9 || p > 100+1e-9 {
				t.Errorf("%v: pos(%g) = %g: not monotonic within [0, 100]", tc.vals, v, p)
			}
			prev = p
		}
	}
	// Inverted pixel range (y axes): monotonic decreasing.
	s := newLogScale([]float64{1, 1000}, 400, 40)
	if !(s.pos(1) == 400 && s.pos(10) > s.pos(100) && s.pos(1000) == 40) {
		t.Errorf("y scale: %g %g %g %g", s.pos(1), s.pos(10), s.pos(100), s.pos(1000))
	}
}

func TestLogLogDegenerate(t *testing.T) {
	one := loglog(t, Plot{Title: "one", Series: []Series{{Name: "only", Points: []Point{{X: 1000, Y: 2e-6}}}}})
	if n := len(one.All("polyline")); n != 1 {
		t.Errorf("%d polylines for a one-point series", n)
	}
	if n := len(one.All("circle")); n != 2 { // the point and its legend key
		t.Errorf("%d circles, want the marker and the legend's", n)
	}
	for _, want := range []string{"1k", "10k", "1µ", "10µ"} {
		if !strings.Contains(strings.Join(one.Texts(), "|"), want) {
			t.Errorf("one point: no tick %q in %q", want, one.Texts())
		}
	}

	for _, tc := range []struct {
		name string
		p    Plot
		want string
	}{
		{"no series", Plot{}, "no series"},
		{"empty series", Plot{Series: []Series{{Name: "a", Points: []Point{{X: 1, Y: 1}}}, {Name: "empty"}}}, `series "empty" has no points`},
		{"zero x", Plot{Series: []Series{{Name: "a", Points: []Point{{X: 0, Y: 1}}}}}, "positive finite"},
		{"negative y", Plot{Series: []Series{{Name: "a", Points: []Point{{X: 1, Y: -1}}}}}, "positive finite"},
		{"NaN", Plot{Series: []Series{{Name: "a", Points: []Point{{X: 1, Y: math.NaN()}}}}}, "positive finite"},
		{"Inf", Plot{Series: []Series{{Name: "a", Points: []Point{{X: math.Inf(1), Y: 1}}}}}, "positive finite"},
		{"bad bar", Plot{Series: []Series{{Name: "a", Points: []Point{{X: 1, Y: 1, Lo: 0, Hi: 2}}}}}, "error bar"},
		{"reversed bar", Plot{Series: []Series{{Name: "a", Points: []Point{{X: 1, Y: 1, Lo: 2, Hi: 0.5}}}}}, "error bar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			err := LogLog(&b, tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if b.Len() != 0 {
				t.Errorf("wrote %d bytes despite the error", b.Len())
			}
		})
	}
}

func TestLogLogManySeries(t *testing.T) {
	var p Plot
	for i := range 9 {
		p.Series = append(p.Series, Series{Name: "s" + strconv.Itoa(i), Points: []Point{{X: 1, Y: float64(i + 1)}, {X: 1e12, Y: 1e-9}}})
	}
	root := loglog(t, p)
	if n := len(root.All("polyline")); n != 9 {
		t.Errorf("%d polylines, want 9", n)
	}
	// 12 decades on x: labels every other decade.
	texts := strings.Join(root.Texts(), "|")
	if !strings.Contains(texts, "|1|100|10k|1M|100M|10G|1T|") || strings.Contains(texts, "|1k|") {
		t.Errorf("x tick labels %q", texts)
	}
	type style struct{ color, marker string }
	seen := map[style]bool{}
	for i := range 9 {
		seen[style{Color(i), Marker(i)}] = true
	}
	if len(seen) != 9 {
		t.Errorf("colour and marker repeat within 9 series")
	}
}

func TestSI(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{1, "1"}, {100, "100"}, {1000, "1k"}, {1500, "1.5k"}, {1e5, "100k"}, {1e6, "1M"}, {999.9, "1k"},
		{1e-3, "1m"}, {1e-6, "1µ"}, {2e-5, "20µ"}, {1e-7, "100n"}, {0.5, "500m"}, {0, "0"}, {1e-20, "1e-20"},
		{123456, "123k"}, {-2000, "-2k"},
	} {
		if got := SI(tc.v); got != tc.want {
			t.Errorf("SI(%g) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestBars(t *testing.T) {
	c := BarChart{
		Title:  "resolve throughput",
		YLabel: "samples/s",
		Groups: []string{"arm64-default", "x86 & co"},
		Series: []BarSeries{{Name: "btree", Values: []float64{9e7, 8e7}}, {Name: "list", Values: []float64{1.2e7, 0}}},
	}
	var b bytes.Buffer
	if err := Bars(&b, c); err != nil {
		t.Fatal(err)
	}
	root := svgtest.Parse(t, b.Bytes())
	var bars []*svgtest.Node
	root.Walk(func(n *svgtest.Node) {
		if n.Attr("class") == "bar" {
			bars = append(bars, n)
		}
	})
	if len(bars) != 4 {
		t.Fatalf("%d bars, want 4", len(bars))
	}
	h := func(n *svgtest.Node) float64 {
		v, err := strconv.ParseFloat(n.Attr("height"), 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Linear: heights proportional to values.
	if r := h(bars[0]) / h(bars[1]); math.Abs(r-9.0/1.2) > 0.01 {
		t.Errorf("btree/list bar heights %g, want %g", r, 9.0/1.2)
	}
	if h(bars[3]) != 0 {
		t.Errorf("zero value drawn %g high", h(bars[3]))
	}
	if bars[0].Attr("fill") == bars[1].Attr("fill") || bars[0].Attr("fill") != bars[2].Attr("fill") {
		t.Errorf("bar colours: %q %q %q", bars[0].Attr("fill"), bars[1].Attr("fill"), bars[2].Attr("fill"))
	}
	texts := strings.Join(root.Texts(), "|")
	for _, want := range []string{"resolve throughput", "samples/s", "arm64-default", "x86 & co", "btree", "list", "90M", "12M", "100M", "|0|"} {
		if !strings.Contains("|"+texts+"|", want) {
			t.Errorf("no text %q in %q", want, texts)
		}
	}

	for _, tc := range []struct {
		name string
		c    BarChart
		want string
	}{
		{"no groups", BarChart{Series: c.Series}, "no groups"},
		{"no series", BarChart{Groups: c.Groups}, "no series"},
		{"short", BarChart{Groups: c.Groups, Series: []BarSeries{{Name: "a", Values: []float64{1}}}}, "1 values for 2 groups"},
		{"negative", BarChart{Groups: []string{"g"}, Series: []BarSeries{{Name: "a", Values: []float64{-1}}}}, "non-negative"},
		{"NaN", BarChart{Groups: []string{"g"}, Series: []BarSeries{{Name: "a", Values: []float64{math.NaN()}}}}, "non-negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Bars(io.Discard, tc.c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	// All zero: still a valid chart.
	b.Reset()
	if err := Bars(&b, BarChart{Groups: []string{"g"}, Series: []BarSeries{{Name: "a", Values: []float64{0}}}}); err != nil {
		t.Fatal(err)
	}
	svgtest.Parse(t, b.Bytes())
}

func TestNiceAxis(t *testing.T) {
	for _, tc := range []struct{ top, step, max float64 }{
		{9e7, 2e7, 1e8}, {100, 20, 100}, {101, 50, 150}, {1, 0.2, 1}, {0, 0.2, 1}, {7, 2, 8},
	} {
		step, ymax := niceAxis(tc.top)
		if !near(step, tc.step) || !near(ymax, tc.max) {
			t.Errorf("niceAxis(%g) = %g, %g; want %g, %g", tc.top, step, ymax, tc.step, tc.max)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrShortWrite }

func TestWriteError(t *testing.T) {
	if err := LogLog(failWriter{}, lookup); err == nil {
		t.Error("LogLog: no error from a failing writer")
	}
}
