package symbols

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

// PerfMap reads a JIT symbol file, /tmp/perf-PID.map, as perf 6.1's
// dso__load_perf_map does: one "START SIZE NAME" line per symbol, START
// and SIZE in hex as strtoull reads them, each symbol inserted as given
// ([START, START+SIZE), no end or duplicate fix-ups). Like perf, it drops
// the last byte of every line, which is the newline except on a last line
// without one, and skips lines too short to hold a name. Look the table
// up with the address itself (the map is anonymous, identity-mapped).
// Lines longer than 64 KiB are skipped whole.
func PerfMap(r io.Reader) (*Table, error) {
	var b builder
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			continue
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		if len(line) > 0 {
			s := string(line[:len(line)-1]) // perf: line[--line_len] = '\0'
			start, n := strtoull16(s)
			n++
			if n+2 < len(s) {
				size, m := strtoull16(s[n:])
				n += m + 1
				if n+2 < len(s) {
					b.insert(entry{start: start, end: start + size, name: s[n:], binding: bindGlobal})
				}
			}
		}
		if err == io.EOF {
			return b.table(nil), nil
		}
	}
}

// strtoull16 is C's strtoull(s, &end, 16): leading white space, an
// optional sign, an optional 0x prefix, hex digits (saturating at 2^64-1);
// it returns the value and the number of bytes consumed (0 when there are
// no digits).
func strtoull16(s string) (uint64, int) {
	i := 0
	for i < len(s) && strings.IndexByte(" \t\n\v\f\r", s[i]) >= 0 {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && hexDigit(s[i+2]) >= 0 {
		i += 2
	}
	start := i
	var v uint64
	over := false
	for i < len(s) && hexDigit(s[i]) >= 0 {
		if v>>60 != 0 {
			over = true
		}
		v = v<<4 | uint64(hexDigit(s[i]))
		i++
	}
	if i == start {
		return 0, 0
	}
	if over {
		return ^uint64(0), i
	}
	if neg {
		v = -v
	}
	return v, i
}

func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
