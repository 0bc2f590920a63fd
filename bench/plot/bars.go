package plot

import (
	"errors"
	"fmt"
	"io"
	"math"
)

// BarChart describes a grouped bar chart on a linear axis from zero: one
// group of bars per category (say, a corpus), one bar per series (say, an
// implementation) in each group.
type BarChart struct {
	Title  string
	YLabel string
	Groups []string
	Series []BarSeries
	// Width and Height are the size in pixels; zero means 720×480.
	Width, Height int
	// Value formats tick and bar labels; nil means SI prefixes.
	Value func(float64) string
}

// BarSeries holds one series' values, parallel to BarChart.Groups.
type BarSeries struct {
	Name   string
	Values []float64
}

// Bars writes c as an SVG grouped bar chart with a linear y axis from zero
// to a rounded maximum, labelled ticks, the value over every bar and a
// legend. Values must be finite and non-negative; there must be at least
// one group and one series, and every series needs a value per group.
func Bars(w io.Writer, c BarChart) error {
	if len(c.Groups) == 0 {
		return errors.New("plot: bar chart has no groups")
	}
	if len(c.Series) == 0 {
		return errors.New("plot: bar chart has no series")
	}
	top := 0.0
	for _, s := range c.Series {
		if len(s.Values) != len(c.Groups) {
			return fmt.Errorf("plot: series %q has %d values for %d groups", s.Name, len(s.Values), len(c.Groups))
		}
		for i, v := range s.Values {
			if !(v >= 0) || math.IsInf(v, 0) {
				return fmt.Errorf("plot: series %q group %q: value %g must be finite and non-negative", s.Name, c.Groups[i], v)
			}
			top = max(top, v)
		}
	}
	format := orSI(c.Value)
	cv := newCanvas(c.Width, c.Height, c.Title)
	step, ymax := niceAxis(top)
	ypos := func(v float64) float64 { return cv.bottom - v/ymax*(cv.bottom-cv.top) }

	ticks := int(math.Round(ymax / step))
	cv.printf(`<g class="grid" fill="none">`)
	for k := 0; k <= ticks; k++ {
		v := float64(k) * step
		cv.printf(`<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="#d0d0d0"/>`, cv.left, ypos(v), cv.right, ypos(v))
	}
	cv.printf(`</g>`)
	cv.frame()
	for k := 0; k <= ticks; k++ {
		v := float64(k) * step
		y := ypos(v)
		cv.printf(`<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="black"/>`, cv.left-6, y, cv.left, y)
		cv.text(cv.left-9, y+4, "end", "tick", format(v))
	}
	groupW := (cv.right - cv.left) / float64(len(c.Groups))
	barW := groupW * 0.8 / float64(len(c.Series))
	for g, name := range c.Groups {
		x0 := cv.left + float64(g)*groupW + groupW*0.1
		cv.text(cv.left+(float64(g)+0.5)*groupW, cv.bottom+20, "middle", "tick", name)
		for i, s := range c.Series {
			v := s.Values[g]
			x, y := x0+float64(i)*barW, ypos(v)
			cv.printf(`<rect class="bar" x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"><title>%s %s: %s</title></rect>`,
				x, y, barW*0.92, cv.bottom-y, Color(i), esc(s.Name), esc(name), esc(format(v)))
			cv.text(x+barW*0.46, y-4, "middle", "value", format(v))
		}
	}
	cv.axisLabels("", c.YLabel)
	series := make([]Series, len(c.Series))
	for i, s := range c.Series {
		series[i].Name = s.Name
	}
	cv.legend(series, func(i int, x, y float64) {
		cv.printf(`<rect x="%.2f" y="%.2f" width="24" height="10" fill="%s"/>`, x, y-5, Color(i))
	})
	return cv.finish(w)
}

// niceAxis returns a tick step of 1, 2 or 5 times a power of ten giving
// about five ticks, and the axis maximum: top rounded up to a step.
func niceAxis(top float64) (step, ymax float64) {
	if top <= 0 {
		return 0.2, 1
	}
	rough := top / 5
	mag := math.Pow(10, math.Floor(math.Log10(rough)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * mag; step >= rough {
			break
		}
	}
	ymax = math.Ceil(top/step*(1-1e-12)) * step
	return step, ymax
}
