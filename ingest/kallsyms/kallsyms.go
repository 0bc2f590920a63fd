// Package kallsyms reads /proc/kallsyms the way Linux perf does
// (tools/lib/symbol/kallsyms.c, kallsyms__parse) and finds the landmark
// symbols that bound the kernel image.
//
// Each line has the form
//
//	ADDR TYPE NAME[\t[MODULE]]
//
// ADDR is hexadecimal without a prefix and must be followed by exactly one
// space, TYPE is one byte followed by one space, and the rest of the line is
// the name, optionally followed by a tab and the bracketed module (or "bpf",
// "__builtin__ftrace", ...) the symbol belongs to. As in perf, a line that
// does not start with a hex digit, or whose separators are not single spaces,
// is skipped. Two departures from perf make a corrupt file an error instead
// of a silently wrong symbol: a name field (name plus module tag) of
// [KsymNameLen] bytes or more is an error (perf before its io rewrite did
// the same; the current io-based reader truncates at 513 bytes and reparses
// the remainder as a new line), and an address with more than 64 bits of
// hex digits is an error (perf drops the high bits).
//
// Symbols appear in any order: core kernel symbols are sorted, module and
// BPF symbols are not. Parse streams; ReadList keeps them compactly in a
// List; ReadFile and ReadAll collect them in a slice.
package kallsyms

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"

	"github.com/kmapindex/kmapindex/index"
)

// KsymNameLen is the kernel's KSYM_NAME_LEN as perf uses it: a name field
// of this many bytes or more is an error.
const KsymNameLen = 512

// Symbol is one line of kallsyms.
type Symbol struct {
	Addr   uint64
	Type   byte   // 'T', 't', 'W', 'D', 'B', 'A', ...
	Name   string // without the module tag
	Module string // the text between the brackets of "\t[...]", or ""
}

// IsFunction reports whether s has a function type (T, t, W or w), as perf's
// kallsyms__is_function.
func (s Symbol) IsFunction() bool {
	switch s.Type {
	case 'T', 't', 'W', 'w':
		return true
	}
	return false
}

// String formats s as a kallsyms line (without the newline).
// The type is written as the byte it is, not as a UTF-8 rune, so that any
// line Parse accepts formats back to itself.
func (s Symbol) String() string {
	b := fmt.Appendf(nil, "%016x ", s.Addr)
	b = append(b, s.Type, ' ')
	b = append(b, s.Name...)
	if s.Module != "" {
		b = append(b, "\t["...)
		b = append(b, s.Module...)
		b = append(b, ']')
	}
	return string(b)
}

// A ParseError reports a line that cannot be accepted, or an error returned
// by the callback of [Parse] while handling a line.
type ParseError struct {
	File string // file name; empty when reading an io.Reader
	Line int    // 1-based line number
	Err  error
}

func (e *ParseError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("kallsyms %s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("kallsyms: line %d: %v", e.Line, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

var (
	// ErrNameTooLong is wrapped by the error for a name field of
	// KsymNameLen bytes or more.
	ErrNameTooLong = errors.New("symbol name too long")
	// ErrAddrRange is wrapped by the error for an address above 64 bits.
	ErrAddrRange = errors.New("address overflows 64 bits")
)

// readBufSize bounds the memory used per line: a longer line can only be
// an error (name too long) or a skipped line, which is read and dropped in
// pieces.
const readBufSize = 4096

// Parse reads kallsyms lines from r and calls fn for each symbol in file
// order. It stops at the first error, including one returned by fn, which
// comes back wrapped in a *ParseError naming the line (errors.Is and
// errors.As see through it). Lines perf skips are skipped silently.
func Parse(r io.Reader, fn func(Symbol) error) error {
	br := bufio.NewReaderSize(r, readBufSize)
	intern := map[string]string{} // module names repeat on many lines
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		long := false
		if err == bufio.ErrBufferFull {
			long = true
		} else if err != nil && err != io.EOF {
			return &ParseError{Line: line, Err: err}
		}
		if len(b) > 0 {
			addr, typ, field, ok, perr := parseLine(string(b), long)
			if perr != nil {
				return &ParseError{Line: line, Err: perr}
			}
			if long {
				// The line was skipped; drop the rest of it.
				if err := skipLine(br); err != nil && err != io.EOF {
					return &ParseError{Line: line, Err: err}
				}
			}
			if ok {
				name, module := splitField(field)
				if m, seen := intern[module]; seen {
					module = m
				} else if len(intern) < 4096 {
					intern[module] = module
				}
				if err := fn(Symbol{Addr: addr, Type: typ, Name: name, Module: module}); err != nil {
					return &ParseError{Line: line, Err: err}
				}
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// skipLine discards input up to and including the next newline.
func skipLine(br *bufio.Reader) error {
	for {
		_, err := br.ReadSlice('\n')
		if err != bufio.ErrBufferFull {
			return err
		}
	}
}

func unhex(c byte) (uint64, bool) {
	v := hexValue[c]
	return uint64(v), v != notHex
}

// hexValue is each byte's value as a hex digit, notHex if it is none: a
// table, where three ranges tested in turn were a third of parsing.
var hexValue = func() (t [256]uint8) {
	for c := range t {
		t[c] = notHex
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = uint8(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = uint8(c-'a') + 10
		t[c-'a'+'A'] = uint8(c-'a') + 10
	}
	return t
}()

const notHex = 0xff

// parseLine parses one line, b, which may end in '\n'. truncated says that
// b is only the first part of a longer line. ok is false for a line perf
// skips. field is the name field: the name, then a tab and the module tag
// if any (splitField).
func parseLine(b string, truncated bool) (addr uint64, typ byte, field string, ok bool, err error) {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	// Address: hex digits, no prefix, then exactly one space.
	i := 0
	big := false
	for ; i < len(b); i++ {
		v, isHex := unhex(b[i])
		if !isHex {
			break
		}
		if addr>>60 != 0 {
			big = true
		}
		addr = addr<<4 | v
	}
	if i == 0 || i >= len(b) || b[i] != ' ' {
		return 0, 0, "", false, nil // perf: io__get_hex != ' ' → skip line
	}
	if big {
		return 0, 0, "", false, fmt.Errorf("%w: %.40q", ErrAddrRange, b[:i])
	}
	i++
	if i+1 >= len(b) || b[i+1] != ' ' {
		// No type byte, or the type is not followed by a space: skipped.
		return 0, 0, "", false, nil
	}
	typ = b[i]
	field = b[i+2:]
	if truncated || len(field) >= KsymNameLen {
		what := fmt.Sprintf("%d bytes", len(field))
		if truncated {
			what = fmt.Sprintf("more than %d bytes", len(field))
		}
		return 0, 0, "", false, fmt.Errorf("%w: name field of %s at address %#x, limit %d (KSYM_NAME_LEN)",
			ErrNameTooLong, what, addr, KsymNameLen-1)
	}
	return addr, typ, field, true, nil
}

// splitField splits a name field into the name and the module: the text
// after the first tab, without its brackets if it has them.
func splitField(field string) (name, module string) {
	name, tag, _ := strings.Cut(field, "\t")
	return name, stripBrackets(tag)
}

// stripBrackets returns a module tag without its brackets, if it has them.
func stripBrackets(tag string) string {
	if len(tag) >= 2 && tag[0] == '[' && tag[len(tag)-1] == ']' {
		return tag[1 : len(tag)-1]
	}
	return tag
}

// ReadFile reads and parses the kallsyms file at path. Errors name the file.
func ReadFile(path string) ([]Symbol, error) {
	l, err := ReadListFile(path)
	if err != nil {
		return nil, err
	}
	return l.Symbols(), nil
}

// withFile names the file in an error of reading it.
func withFile(err error, path string) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		pe.File = path
		return pe
	}
	return fmt.Errorf("kallsyms %s: %w", path, err)
}

// MaxFileSize bounds the kallsyms input ReadAll and ReadFile accept
// (/proc/kallsyms is a few MiB; this allows a hundred times that).
const MaxFileSize = 1 << 30

// readAllChunk is the size of the chunks ReadList reads ahead.
const readAllChunk = 16 << 10

// ReadAll parses all of r and returns the symbols in file order, as Parse
// does, reading as [ReadList] does.
func ReadAll(r io.Reader) ([]Symbol, error) {
	l, err := ReadList(r)
	if err != nil {
		return nil, err
	}
	return l.Symbols(), nil
}

// FunctionStart returns the address of the first kernel (not module)
// symbol named name whose type is a function type or 'A', as perf's
// kallsyms__get_function_start finds it.
func FunctionStart(syms []Symbol, name string) (uint64, bool) {
	return functionStart(slices.Values(syms), name)
}

func functionStart(syms iter.Seq[Symbol], name string) (uint64, bool) {
	for s := range syms {
		if s.Module == "" && s.Name == name && (s.IsFunction() || s.Type == 'A') {
			return s.Addr, true
		}
	}
	return 0, false
}

// Landmarks finds the kernel image bounds the way perf does
// (machine__get_running_kernel_start and its helpers): _text, _stext and
// _etext are the first line in file order with that name, no module tag and
// a function type (T, t, W, w) or exactly 'A' (kallsyms__get_function_start;
// PARISC's _text is an 'A' alias); _edata and _end are the first line with
// that name and no module tag, of any type (kallsyms__get_symbol_start).
// A landmark whose address is 0 (kptr_restrict) is still found; see
// [Restricted].
func Landmarks(syms []Symbol) index.Landmarks { return landmarks(slices.Values(syms)) }

func landmarks(syms iter.Seq[Symbol]) index.Landmarks {
	var l index.Landmarks
	for s := range syms {
		if s.Module != "" {
			continue
		}
		fn := s.IsFunction() || s.Type == 'A'
		var lm *index.Landmark
		switch s.Name {
		case "_text":
			if fn {
				lm = &l.Text
			}
		case "_stext":
			if fn {
				lm = &l.Stext
			}
		case "_etext":
			if fn {
				lm = &l.Etext
			}
		case "_edata":
			lm = &l.Edata
		case "_end":
			lm = &l.End
		}
		if lm != nil && !lm.OK {
			*lm = index.Landmark{Addr: s.Addr, OK: true}
		}
	}
	return l
}

// Restricted reports whether syms is non-empty and every address is 0, as
// /proc/kallsyms reads for an unprivileged user under kptr_restrict. Such a
// file carries names but no addresses; callers should refuse it.
func Restricted(syms []Symbol) bool {
	for _, s := range syms {
		if s.Addr != 0 {
			return false
		}
	}
	return len(syms) > 0
}
