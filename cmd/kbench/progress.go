package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progressBar draws a one-line progress bar over a byte count on a
// terminal, at most every progressEvery, and clears it when done:
//
//	big.data  42% [============                  ] 24 MB / 56 MB
//
// or, when the size is unknown (a pipe), the bytes read so far.
// Hand-written: github.com/schollz/progressbar, used before, imports
// net/http, which made kbench's binary 12.5 MB instead of 10.1 (linked
// against libc) and every run start 2.6 MB larger in memory.
type progressBar struct {
	w          io.Writer
	name       string
	size, cur  int64
	last       time.Time // when last drawn
	lineLength int       // of the line drawn, to clear it
}

const (
	progressEvery = 100 * time.Millisecond
	progressWidth = 30
)

func newProgressBar(w io.Writer, name string, size int64) *progressBar {
	return &progressBar{w: w, name: name, size: size}
}

// RenderBlank draws the bar at 0.
func (b *progressBar) RenderBlank() { b.draw() }

// Describe changes the bar's name.
func (b *progressBar) Describe(name string) { b.name = name }

// Set64 moves the bar to n bytes, drawing it if progressEvery passed.
func (b *progressBar) Set64(n int64) {
	b.cur = n
	if time.Since(b.last) >= progressEvery {
		b.draw()
	}
}

// Finish clears the bar's line.
func (b *progressBar) Finish() {
	if b.lineLength > 0 {
		fmt.Fprintf(b.w, "\r%s\r", strings.Repeat(" ", b.lineLength))
		b.lineLength = 0
	}
}

func (b *progressBar) draw() {
	b.last = time.Now()
	var line string
	if b.size > 0 {
		frac := min(max(float64(b.cur)/float64(b.size), 0), 1)
		done := int(frac * progressWidth)
		line = fmt.Sprintf("%s %3.0f%% [%s%s] %s / %s", b.name, 100*frac,
			strings.Repeat("=", done), strings.Repeat(" ", progressWidth-done), megabytes(b.cur), megabytes(b.size))
	} else {
		line = fmt.Sprintf("%s %s", b.name, megabytes(b.cur))
	}
	pad := max(b.lineLength-len(line), 0)
	fmt.Fprintf(b.w, "\r%s%s", line, strings.Repeat(" ", pad))
	b.lineLength = len(line)
}

// megabytes formats n bytes in MB, one decimal below 10.
func megabytes(n int64) string {
	mb := float64(n) / 1e6
	if mb < 10 {
		return fmt.Sprintf("%.1f MB", mb)
	}
	return fmt.Sprintf("%.0f MB", mb)
}
