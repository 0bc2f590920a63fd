package plot_test

import (
	"bytes"
	"fmt"
	"log"
	"strings"

	"github.com/kmapindex/kmapindex/bench/plot"
)

func ExampleLogLog() {
	p := plot.Plot{
		Title:  "Lookup: time per op",
		XLabel: "n (maps)",
		YLabel: "time per op (s)",
		Series: []plot.Series{
			{Name: "list", Points: []plot.Point{{X: 100, Y: 240e-9}, {X: 1000, Y: 6.3e-6}, {X: 10000, Y: 54e-6}}},
			{Name: "btree", Points: []plot.Point{{X: 100, Y: 350e-9}, {X: 1000, Y: 1.4e-6}, {X: 10000, Y: 1.5e-6}}},
		},
	}
	var svg bytes.Buffer
	if err := plot.LogLog(&svg, p); err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.Count(svg.String(), "<polyline"), "lines")
	fmt.Println(strings.Contains(svg.String(), `>10k</text>`), strings.Contains(svg.String(), `>100µ</text>`))
	// Output:
	// 2 lines
	// true true
}

func ExampleBars() {
	c := plot.BarChart{
		Title:  "resolve throughput",
		YLabel: "samples/s",
		Groups: []string{"arm64-default"},
		Series: []plot.BarSeries{{Name: "btree", Values: []float64{9e7}}, {Name: "list", Values: []float64{1.2e7}}},
	}
	var svg bytes.Buffer
	if err := plot.Bars(&svg, c); err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.Count(svg.String(), `class="bar"`), "bars")
	// Output:
	// 2 bars
}
