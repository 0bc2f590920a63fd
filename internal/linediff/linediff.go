// Package linediff describes where two texts first differ, line by line:
// the message tests print when an output differs from perf's.
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
