package perftest

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

func TestRunErrors(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		if _, _, err := Run(Options{}, "--version"); !errors.Is(err, ErrNotInstalled) {
			t.Fatalf("without perf: %v, want ErrNotInstalled", err)
		}
		return
	}
	out, _, err := Run(Options{NoBuildIDCache: true}, "--version")
	if err != nil || !strings.HasPrefix(out, "perf version") {
		t.Fatalf("perf --version: %q, %v", out, err)
	}
	_, _, err = Run(Options{}, "script", "-i", "/nonexistent/perf.data")
	if err == nil || !strings.Contains(err.Error(), "perf script -i /nonexistent/perf.data") {
		t.Fatalf("failing perf: %v, want an error naming the command", err)
	}
}
