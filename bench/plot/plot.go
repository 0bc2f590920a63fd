// Package plot draws small, self-contained SVG 1.1 charts of benchmark
// results: log-log line plots (time per operation against problem size,
// one series per implementation) and grouped bar charts (throughput per
// corpus and implementation). It needs nothing beyond the standard library
// and a browser to view the output.
package plot

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Point is one data point. If Lo and Hi are both non-zero, an error bar is
// drawn from Lo to Hi at X (for example a confidence interval of Y).
type Point struct {
	X, Y   float64
	Lo, Hi float64
}

// Series is a named sequence of points, drawn as one line with markers.
type Series struct {
	Name   string
	Points []Point
}

// Plot describes a line plot.
type Plot struct {
	Title          string
	XLabel, YLabel string
	Series         []Series
	// Width and Height are the size in pixels; zero means 720×480.
	Width, Height int
	// XTick and YTick format tick labels; nil means SI prefixes
	// ("100", "1k", "10µ").
	XTick, YTick func(float64) string
}

const (
	defaultWidth  = 720
	defaultHeight = 480
	marginLeft    = 80
	marginTop     = 44
	marginBottom  = 56
	legendWidth   = 170
)

// palette holds colour-blind-safe colours (Okabe and Ito), cycled per
// series; markers cycle at a different period so that series keep apart
// even when colours repeat.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"}

var markers = []string{"circle", "square", "triangle", "diamond", "triangle-down", "pentagon"}

// Color returns the colour of series i.
func Color(i int) string { return palette[i%len(palette)] }

// Marker returns the name of the marker shape of series i.
func Marker(i int) string { return markers[i%len(markers)] }

// LogLog writes p as an SVG line plot with logarithmic x and y axes: decade
// ticks, grid lines and labels on both axes, minor grid lines at 2…9 times
// each decade, one polyline with markers per series (and error bars where
// points have them), and a legend. Every coordinate must be positive and
// finite; a plot needs at least one series and every series at least one
// point.
func LogLog(w io.Writer, p Plot) error {
	if len(p.Series) == 0 {
		return errors.New("plot: no series")
	}
	var xs, ys []float64
	for _, s := range p.Series {
		if len(s.Points) == 0 {
			return fmt.Errorf("plot: series %q has no points", s.Name)
		}
		for i, pt := range s.Points {
			if !positive(pt.X) || !positive(pt.Y) {
				return fmt.Errorf("plot: series %q point %d (x=%g, y=%g): log axes need positive finite values", s.Name, i, pt.X, pt.Y)
			}
			xs, ys = append(xs, pt.X), append(ys, pt.Y)
			if hasBar(pt) {
				if !positive(pt.Lo) || !positive(pt.Hi) || pt.Lo > pt.Hi {
					return fmt.Errorf("plot: series %q point %d: error bar [%g, %g] must be positive, finite and ordered", s.Name, i, pt.Lo, pt.Hi)
				}
				ys = append(ys, pt.Lo, pt.Hi)
			}
		}
	}
	c := newCanvas(p.Width, p.Height, p.Title)
	xsc, ysc := newLogScale(xs, c.left, c.right), newLogScale(ys, c.bottom, c.top)
	xtick, ytick := orSI(p.XTick), orSI(p.YTick)

	c.grid(xsc, ysc)
	c.frame()
	for k := xsc.d0; k <= xsc.d1; k += xsc.labelStep() {
		v := math.Pow(10, float64(k))
		x := xsc.pos(v)
		c.printf(`<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="black"/>`, x, c.bottom, x, c.bottom+6)
		c.text(x, c.bottom+20, "middle", "tick", xtick(v))
	}
	for k := ysc.d0; k <= ysc.d1; k += ysc.labelStep() {
		v := math.Pow(10, float64(k))
		y := ysc.pos(v)
		c.printf(`<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="black"/>`, c.left-6, y, c.left, y)
		c.text(c.left-9, y+4, "end", "tick", ytick(v))
	}
	c.axisLabels(p.XLabel, p.YLabel)

	for i, s := range p.Series {
		pts := slices.Clone(s.Points)
		slices.SortStableFunc(pts, func(a, b Point) int { return cmp.Compare(a.X, b.X) })
		color := Color(i)
		c.printf(`<g class="series" id="series-%d">`, i)
		c.printf(`<title>%s</title>`, esc(s.Name))
		var coords []string
		for _, pt := range pts {
			coords = append(coords, fmt.Sprintf("%.2f,%.2f", xsc.pos(pt.X), ysc.pos(pt.Y)))
		}
		c.printf(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round"/>`, strings.Join(coords, " "), color)
		for _, pt := range pts {
			x := xsc.pos(pt.X)
			if hasBar(pt) {
				lo, hi := ysc.pos(pt.Lo), ysc.pos(pt.Hi)
				c.printf(`<path class="errorbar" d="M%.2f %.2fV%.2fM%.2f %.2fh8M%.2f %.2fh8" stroke="%s" fill="none"/>`, x, lo, hi, x-4, lo, x-4, hi, color)
			}
			c.marker(i, x, ysc.pos(pt.Y))
		}
		c.printf(`</g>`)
	}
	c.legend(p.Series, func(i int, x, y float64) {
		c.printf(`<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="%s" stroke-width="2"/>`, x, y, x+24, y, Color(i))
		c.marker(i, x+12, y)
	})
	return c.finish(w)
}

func positive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

func hasBar(p Point) bool { return p.Lo != 0 || p.Hi != 0 }

func orSI(f func(float64) string) func(float64) string {
	if f != nil {
		return f
	}
	return SI
}

// logScale maps values to pixels over whole decades [10^d0, 10^d1].
type logScale struct {
	d0, d1     int
	px0, px1   float64 // pixels of 10^d0 and 10^d1
	lmin, lmax float64
}

func newLogScale(vals []float64, px0, px1 float64) logScale {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		lo, hi = min(lo, v), max(hi, v)
	}
	// The small slack keeps exact powers of ten from rounding a decade out.
	d0 := int(math.Floor(math.Log10(lo) + 1e-9))
	d1 := int(math.Ceil(math.Log10(hi) - 1e-9))
	if d1 <= d0 {
		d1 = d0 + 1
	}
	return logScale{d0: d0, d1: d1, px0: px0, px1: px1, lmin: float64(d0), lmax: float64(d1)}
}

func (s logScale) pos(v float64) float64 {
	return s.px0 + (math.Log10(v)-s.lmin)/(s.lmax-s.lmin)*(s.px1-s.px0)
}

// labelStep labels every decade up to 10 of them, then every other, ….
func (s logScale) labelStep() int {
	return max(1, (s.d1-s.d0+9)/10)
}

// SI formats v with three significant digits and an SI prefix: 1500 →
// "1.5k", 2e-5 → "20µ", 100 → "100".
func SI(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	g := int(math.Floor(math.Floor(math.Log10(math.Abs(v))+1e-9) / 3))
	m := round3(v / math.Pow(10, 3*float64(g)))
	if math.Abs(m) >= 1000 {
		g++
		m = round3(v / math.Pow(10, 3*float64(g)))
	}
	i := g + 6
	if i < 0 || i >= len(siPrefixes) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(m, 'f', -1, 64) + siPrefixes[i]
}

var siPrefixes = []string{"a", "f", "p", "n", "µ", "m", "", "k", "M", "G", "T", "P", "E"}

// round3 rounds to three significant digits.
func round3(v float64) float64 {
	if v == 0 {
		return 0
	}
	f, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	if err != nil {
		return v
	}
	return f
}

// canvas accumulates the SVG document.
type canvas struct {
	b                        strings.Builder
	width, height            int
	left, right, top, bottom float64 // plot area
}

func newCanvas(width, height int, title string) *canvas {
	if width <= 0 {
		width = defaultWidth
	}
	if height <= 0 {
		height = defaultHeight
	}
	c := &canvas{width: width, height: height,
		left: marginLeft, right: float64(width - legendWidth), top: marginTop, bottom: float64(height - marginBottom)}
	c.printf(`<?xml version="1.0" encoding="UTF-8" standalone="no"?>`)
	c.printf(`<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`, width, height, width, height)
	c.printf(`<title>%s</title>`, esc(title))
	c.printf(`<rect width="%d" height="%d" fill="white"/>`, width, height)
	c.text((c.left+c.right)/2, 26, "middle", "title", title)
	return c
}

func (c *canvas) printf(format string, args ...any) {
	fmt.Fprintf(&c.b, format, args...)
	c.b.WriteByte('\n')
}

func (c *canvas) text(x, y float64, anchor, class, s string) {
	size := ""
	if class == "title" {
		size = ` font-size="16" font-weight="bold"`
	}
	c.printf(`<text class="%s" x="%.2f" y="%.2f" text-anchor="%s"%s>%s</text>`, class, x, y, anchor, size, esc(s))
}

// grid draws decade grid lines and, when there are few decades, minor
// lines at 2…9 times each decade.
func (c *canvas) grid(xsc, ysc logScale) {
	c.printf(`<g class="grid" fill="none">`)
	for _, sc := range []struct {
		s logScale
		x bool
	}{{xsc, true}, {ysc, false}} {
		minor := sc.s.d1-sc.s.d0 <= 6
		for k := sc.s.d0; k <= sc.s.d1; k++ {
			for m := 1; m <= 9; m++ {
				if m > 1 && (!minor || k == sc.s.d1) {
					break
				}
				p := sc.s.pos(float64(m) * math.Pow(10, float64(k)))
				stroke := "#d0d0d0"
				if m > 1 {
					stroke = "#eeeeee"
				}
				if sc.x {
					c.printf(`<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="%s"/>`, p, c.top, p, c.bottom, stroke)
				} else {
					c.printf(`<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="%s"/>`, c.left, p, c.right, p, stroke)
				}
			}
		}
	}
	c.printf(`</g>`)
}

func (c *canvas) frame() {
	c.printf(`<rect class="frame" x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="none" stroke="black"/>`, c.left, c.top, c.right-c.left, c.bottom-c.top)
}

func (c *canvas) axisLabels(xlabel, ylabel string) {
	c.text((c.left+c.right)/2, float64(c.height)-14, "middle", "xlabel", xlabel)
	x, y := 18.0, (c.top+c.bottom)/2
	c.printf(`<text class="ylabel" x="%.2f" y="%.2f" text-anchor="middle" transform="rotate(-90 %.2f %.2f)">%s</text>`, x, y, x, y, esc(ylabel))
}

// marker draws series i's marker centred on (x, y).
func (c *canvas) marker(i int, x, y float64) {
	color := Color(i)
	const r = 4.0
	poly := func(pts ...float64) {
		var s []string
		for j := 0; j+1 < len(pts); j += 2 {
			s = append(s, fmt.Sprintf("%.2f,%.2f", x+pts[j], y+pts[j+1]))
		}
		c.printf(`<polygon class="marker" points="%s" fill="%s"/>`, strings.Join(s, " "), color)
	}
	switch Marker(i) {
	case "circle":
		c.printf(`<circle class="marker" cx="%.2f" cy="%.2f" r="%.1f" fill="%s"/>`, x, y, r, color)
	case "square":
		c.printf(`<rect class="marker" x="%.2f" y="%.2f" width="%.1f" height="%.1f" fill="%s"/>`, x-r, y-r, 2*r, 2*r, color)
	case "triangle":
		poly(0, -r-1, r+1, r, -r-1, r)
	case "diamond":
		poly(0, -r-1, r+1, 0, 0, r+1, -r-1, 0)
	case "triangle-down":
		poly(0, r+1, r+1, -r, -r-1, -r)
	default: // pentagon
		var pts []float64
		for k := range 5 {
			a := -math.Pi/2 + float64(k)*2*math.Pi/5
			pts = append(pts, (r+1)*math.Cos(a), (r+1)*math.Sin(a))
		}
		poly(pts...)
	}
}

// legend lists the series to the right of the plot area; key draws series
// i's key at (x, y).
func (c *canvas) legend(series []Series, key func(i int, x, y float64)) {
	x, y := c.right+16, c.top+8
	c.printf(`<g class="legend">`)
	c.printf(`<rect x="%.2f" y="%.2f" width="%d" height="%d" fill="white" stroke="#999999"/>`, x-6, y-8, legendWidth-20, 20*len(series)+6)
	for i, s := range series {
		yy := y + 20*float64(i) + 5
		key(i, x, yy)
		c.printf(`<text class="legend-label" x="%.2f" y="%.2f">%s</text>`, x+32, yy+4, esc(s.Name))
	}
	c.printf(`</g>`)
}

func (c *canvas) finish(w io.Writer) error {
	c.printf(`</svg>`)
	bw := bufio.NewWriter(w)
	if _, err := bw.WriteString(c.b.String()); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

// esc escapes text for XML character data and attribute values.
func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&apos;")
		default:
			if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
				continue // not allowed in XML 1.0
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}
