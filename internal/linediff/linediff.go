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

// ReportText returns a perf report --stdio table whole (or kbench's),
// but for its first line (perf's pointer to --header, kbench's count of
// samples without a map) and perf's closing tip ("#", "# (...)", "#"):
// its lines with trailing blanks trimmed, as perf's rows are.
func ReportText(text string) string {
	lines := strings.Split(text, "\n")
	if len(lines) > 0 {
		lines = lines[1:]
	}
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	if n := len(lines); n >= 4 && lines[n-1] == "" && lines[n-2] == "#" && strings.HasPrefix(lines[n-3], "# (") && lines[n-4] == "#" {
		lines = append(lines[:n-4], "")
	}
	return strings.Join(lines, "\n")
}
