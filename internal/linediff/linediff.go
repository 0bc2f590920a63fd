// Package linediff compares outputs with perf's for the tests: where two
// texts first differ, line by line, and the rows of a perf report table.
package linediff

import (
	"fmt"
	"strings"
)

// First describes the first line where got and want differ, or their
// line counts when one is a prefix of the other; "" when they are equal.
func First(got, want string) string {
	if got == want {
		return ""
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			return fmt.Sprintf("line %d:\n got %q\nwant %q", i+1, gl[i], wl[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(gl), len(wl))
}

// ReportRows returns the data rows of a perf report --stdio table (or
// of kbench's table, laid out like it), whitespace-normalized, in order:
// comment and blank lines dropped.
func ReportRows(text string) []string {
	var rows []string
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rows = append(rows, strings.Join(strings.Fields(line), " "))
	}
	return rows
}
