// Package modules reads /proc/modules the way Linux perf does
// (tools/perf/util/symbol.c, modules__parse).
//
// A line looks like
//
//	nf_tables 315392 0 - Live 0xffffffffc0a00000
//
// and perf takes three things from it, each by its own rule:
//
//   - the name is the text before the first space (perf stores it as
//     "[name]"; [index.Module] keeps it bare);
//   - the size is C strtoul (base 0: decimal, 0x hex or 0 octal, leading
//     blanks and a sign allowed) of the text after that space, and it must
//     be followed by a space or a tab, else the line is skipped;
//   - the start is C strtoull base 16 of the text after the last 'x' in the
//     line (the "0x…" address column); no digits there read as 0. A line
//     without any 'x' or without a space is skipped.
//
// With kptr_restrict the addresses read as 0; see [Restricted].
//
// perf drops the last byte of every line, its newline, and so the last
// digit of a last line's address when the file does not end with one (a
// hand-made modules file): Parse does too, since the address then no
// longer matches the module's map and perf refuses kcore.
//
// Departures from perf, all for input the kernel never writes: a number
// that overflows 64 bits, or a start+size beyond 2^64, is an error (C
// saturates or wraps); and a line longer than [MaxLine] bytes is an
// error.
package modules

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/internal/regular"
)

// MaxLine is the longest line accepted, in bytes, newline included.
const MaxLine = 64 << 10

// A ParseError reports a line that cannot be accepted.
type ParseError struct {
	File string // file name; empty when reading an io.Reader
	Line int    // 1-based line number
	Err  error
}

func (e *ParseError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("modules %s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("modules: line %d: %v", e.Line, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

var (
	// ErrRange is wrapped by the error for a number above 64 bits or a
	// module that extends beyond 2^64.
	ErrRange = errors.New("value out of range")
	// ErrLineTooLong is wrapped by the error for a line over MaxLine bytes.
	ErrLineTooLong = errors.New("line too long")
)

// Parse reads /proc/modules text from r and returns its modules in file
// order.
func Parse(r io.Reader) ([]index.Module, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLine)
	sc.Split(scanLines)
	var mods []index.Module
	line := 0
	for sc.Scan() {
		line++
		m, ok, err := parseLine(sc.Bytes())
		if err != nil {
			return nil, &ParseError{Line: line, Err: err}
		}
		if ok {
			m.Line = line
			mods = append(mods, m)
		}
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			err = fmt.Errorf("%w: more than %d bytes", ErrLineTooLong, MaxLine)
		}
		return nil, &ParseError{Line: line + 1, Err: err}
	}
	return mods, nil
}

// scanLines splits lines as getline does and drops each one's last byte
// as modules__parse does ("line[--line_len] = '\0'"): its newline, or on
// a last line without one, its last character. A carriage return stays,
// as in perf.
func scanLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data[:len(data)-1], nil
	}
	return 0, nil, nil
}

// parseLine parses one line without its newline. ok is false for a line
// perf skips.
func parseLine(b []byte) (m index.Module, ok bool, err error) {
	x := bytes.LastIndexByte(b, 'x')
	if x < 0 {
		return m, false, nil
	}
	start, _, overflow := strtoull(b[x+1:], 16)
	if overflow {
		return m, false, fmt.Errorf("%w: address %.40q", ErrRange, b[x+1:])
	}
	sp := bytes.IndexByte(b, ' ')
	if sp < 0 {
		return m, false, nil
	}
	size, n, overflow := strtoull(b[sp+1:], 0)
	if end := sp + 1 + n; end >= len(b) || (b[end] != ' ' && b[end] != '\t') {
		return m, false, nil
	}
	if overflow {
		return m, false, fmt.Errorf("%w: size %.40q", ErrRange, b[sp+1:])
	}
	if size > math.MaxUint64-start {
		return m, false, fmt.Errorf("%w: module %q at %#x of size %#x ends beyond 2^64", ErrRange, b[:sp], start, size)
	}
	return index.Module{Name: string(b[:sp]), Start: start, Size: size}, true, nil
}

// strtoull mimics C strtoull(s, &end, base) for base 0 or 16: it returns
// the value, the number of bytes consumed (0 when there are no digits, as C
// then sets end = s) and whether the value overflowed 64 bits.
func strtoull(s []byte, base int) (v uint64, n int, overflow bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i+1 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && (base == 0 || base == 16) {
		if i+2 < len(s) && digit(s[i+2], 16) >= 0 {
			base = 16
			i += 2
		} else {
			// "0x" without hex digits reads as the 0 before the x.
			return 0, i + 1, false
		}
	} else if base == 0 {
		base = 10
		if i < len(s) && s[i] == '0' {
			base = 8
		}
	}
	b := uint64(base)
	digits := 0
	for ; i < len(s); i++ {
		d := digit(s[i], base)
		if d < 0 {
			break
		}
		digits++
		if v > (math.MaxUint64-uint64(d))/b {
			overflow = true
		}
		v = v*b + uint64(d)
	}
	if digits == 0 {
		return 0, 0, false
	}
	if neg {
		v = -v
	}
	return v, i, overflow
}

func digit(c byte, base int) int {
	d := -1
	switch {
	case '0' <= c && c <= '9':
		d = int(c - '0')
	case 'a' <= c && c <= 'z':
		d = int(c-'a') + 10
	case 'A' <= c && c <= 'Z':
		d = int(c-'A') + 10
	}
	if d >= base {
		return -1
	}
	return d
}

// ReadFile reads and parses the modules file at path. Errors name the file.
func ReadFile(path string) ([]index.Module, error) {
	f, err := regular.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	mods, err := Parse(f)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			pe.File = path
			return nil, pe
		}
		return nil, fmt.Errorf("modules %s: %w", path, err)
	}
	return mods, nil
}

// Restricted reports whether mods is non-empty and every start address is
// 0, as /proc/modules reads under kptr_restrict. Callers should refuse it.
func Restricted(mods []index.Module) bool {
	for _, m := range mods {
		if m.Start != 0 {
			return false
		}
	}
	return len(mods) > 0
}
