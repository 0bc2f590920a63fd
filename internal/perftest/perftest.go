// Package perftest runs the installed perf for the tests that compare
// kmapindex with it: one place that finds perf, runs it and reports its
// stderr when it fails.
package perftest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// ErrNotInstalled is returned when there is no perf on $PATH.
var ErrNotInstalled = errors.New("perf not installed")

// Installed reports whether there is a perf on $PATH.
func Installed() bool {
	_, err := exec.LookPath("perf")
	return err == nil
}

// Options change how perf runs.
type Options struct {
	// NoBuildIDCache runs perf with HOME set to a new empty directory,
	// so that ~/.debug plays no part.
	NoBuildIDCache bool
	// Home, if set, is perf's HOME: its build-id cache is Home/.debug.
	Home string
	// Dir, if set, is perf's working directory (where it looks for a
	// file named vmlinux first).
	Dir string
}

// Run runs perf with args and returns its standard output and standard
// error. The error is ErrNotInstalled without perf, or names the command
// and quotes its standard error when perf fails.
func Run(opts Options, args ...string) (stdout, stderr string, err error) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		return "", "", ErrNotInstalled
	}
	cmd := exec.Command(perf, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Dir = opts.Dir
	if opts.Home != "" {
		cmd.Env = append(os.Environ(), "HOME="+opts.Home)
	}
	if opts.NoBuildIDCache {
		home, err := os.MkdirTemp("", "perftest-home-")
		if err != nil {
			return "", "", err
		}
		defer os.RemoveAll(home)
		cmd.Env = append(os.Environ(), "HOME="+home)
	}
	out, err := cmd.Output()
	if err != nil {
		return string(out), errb.String(), fmt.Errorf("perf %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return string(out), errb.String(), nil
}

// Script runs perf script -F ip,sym,dso -i file with args after them: the
// line format kbench report -format script reproduces.
func Script(file string, args ...string) (string, error) {
	out, _, err := Run(Options{}, append([]string{"script", "-F", "ip,sym,dso", "-i", file}, args...)...)
	return out, err
}

// ReportTable runs perf report --stdio --sort dso,sym --no-children -n
// -g none -i file with args after them: the table kbench report -format
// table reproduces.
func ReportTable(file string, args ...string) (string, error) {
	out, _, err := Run(Options{}, append([]string{"report", "-i", file, "--stdio", "--sort", "dso,sym", "--no-children", "-n", "-g", "none"}, args...)...)
	return out, err
}

// Record runs perf record -q -o out with args, on the command after "--":
// the tests' fresh recordings. It fails with perf's stderr (recording
// needs root or perf_event_paranoid <= 1), or ErrNotInstalled.
func Record(out string, args []string, command ...string) error {
	a := append(append([]string{"record", "-q", "-o", out}, args...), "--")
	_, _, err := Run(Options{}, append(a, command...)...)
	return err
}
