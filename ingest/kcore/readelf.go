package kcore

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// TypeUnknown is the type ParseReadelf gives a program header whose
// readelf type name it does not know (such a header is never PT_LOAD):
// -1, which no 32-bit p_type is where int has 64 bits, and which fits
// where it has 32.
const TypeUnknown elf.ProgType = -1

// maxLine bounds the length of a readelf text line.
const maxLine = 64 << 10

// readelfTypes maps readelf's type column to program header types.
var readelfTypes = func() map[string]elf.ProgType {
	m := map[string]elf.ProgType{}
	for _, t := range []elf.ProgType{
		elf.PT_NULL, elf.PT_LOAD, elf.PT_DYNAMIC, elf.PT_INTERP, elf.PT_NOTE, elf.PT_SHLIB,
		elf.PT_PHDR, elf.PT_TLS, elf.PT_GNU_EH_FRAME, elf.PT_GNU_STACK, elf.PT_GNU_RELRO,
		elf.PT_GNU_PROPERTY, elf.PT_PAX_FLAGS, elf.PT_OPENBSD_RANDOMIZE,
		elf.PT_OPENBSD_WXNEEDED, elf.PT_OPENBSD_BOOTDATA,
	} {
		m[strings.TrimPrefix(t.String(), "PT_")] = t
	}
	m["GNU_SFRAME"] = 0x6474e554
	m["GNU_MBIND"] = elf.PT_GNU_MBIND_LO
	return m
}()

// A ReadelfError reports malformed readelf text.
type ReadelfError struct {
	Line int // 1-based line number
	Msg  string
}

func (e *ReadelfError) Error() string {
	return fmt.Sprintf("readelf text: line %d: %s", e.Line, e.Msg)
}

func (e *ReadelfError) Unwrap() error { return ErrFormat }

// ParseReadelf reads the program headers from the text `readelf -l`,
// `readelf -lW` or `readelf -a` prints for one file. Both layouts are
// understood: the default one, where a 64-bit header takes two lines, and
// the wide (-W) or 32-bit one, one line per header. Only the first
// "Program Headers:" block is read; "[Requesting program interpreter…]"
// lines are skipped. When the text also says "There are N program headers",
// the count must match. Flags other than R, W and E are not in the text and
// read as absent; type names outside the common ones read as TypeUnknown.
// Text saying "There are no program headers in this file." gives an empty
// list; text with neither that nor a block is an error.
func ParseReadelf(r io.Reader) ([]elf.ProgHeader, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	p := readelfParser{want: -1}
	for sc.Scan() {
		p.line++
		done, err := p.feed(sc.Text())
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &ReadelfError{p.line + 1, fmt.Sprintf("line longer than %d bytes", maxLine)}
		}
		return nil, fmt.Errorf("readelf text: line %d: %w", p.line+1, err)
	}
	if p.pending != nil {
		return nil, &ReadelfError{p.line, "input ends inside a two-line program header"}
	}
	switch {
	case p.state == stateBefore && p.none:
		return nil, nil
	case p.state == stateBefore:
		return nil, &ReadelfError{p.line, `no "Program Headers:" block`}
	case p.want >= 0 && len(p.progs) != p.want:
		return nil, &ReadelfError{p.line, fmt.Sprintf("found %d program headers, the text announces %d", len(p.progs), p.want)}
	}
	return p.progs, nil
}

const (
	stateBefore = iota // looking for "Program Headers:"
	stateIn            // inside the block
)

type layout int

const (
	layoutUnknown layout = iota
	layoutOneLine        // -W, or any 32-bit file: all fields on one line
	layoutTwoLine        // 64-bit default: Type Offset VirtAddr PhysAddr / FileSiz MemSiz Flags Align
)

type readelfParser struct {
	line    int
	state   int
	layout  layout
	want    int  // count announced by "There are N program headers", or -1
	none    bool // "There are no program headers in this file."
	progs   []elf.ProgHeader
	pending *elf.ProgHeader // first line of a two-line header
}

func (p *readelfParser) errf(format string, args ...any) error {
	return &ReadelfError{p.line, fmt.Sprintf(format, args...)}
}

// feed handles one line; done reports the end of the block.
func (p *readelfParser) feed(s string) (done bool, err error) {
	t := strings.TrimSpace(s)
	if p.state == stateBefore {
		switch {
		case t == "Program Headers:":
			p.state = stateIn
		case t == "There are no program headers in this file.":
			p.none = true
		case strings.HasPrefix(t, "There is 1 program header,"):
			p.want = 1
		case strings.HasPrefix(t, "There are ") && strings.Contains(t, " program headers, "):
			f := strings.Fields(t)
			n, err := strconv.Atoi(f[2])
			if err != nil || n < 0 {
				return false, p.errf("bad program header count %q", f[2])
			}
			p.want = n
		}
		return false, nil
	}
	switch {
	case t == "":
		return true, p.endCheck()
	case s[0] != ' ' && s[0] != '\t':
		return true, p.endCheck()
	case strings.HasPrefix(t, "Type ") && strings.Contains(t, "Offset"):
		if strings.Contains(t, "FileSiz") {
			p.layout = layoutOneLine
		} else {
			p.layout = layoutTwoLine
		}
		return false, nil
	case strings.HasPrefix(t, "FileSiz "):
		return false, nil // second column-header line of the two-line layout
	case strings.HasPrefix(t, "["):
		return false, nil // [Requesting program interpreter: ...]
	}
	return false, p.entry(s, t)
}

func (p *readelfParser) endCheck() error {
	if p.pending != nil {
		return p.errf("two-line program header without its second line")
	}
	return nil
}

// entry parses a line holding (part of) one program header.
func (p *readelfParser) entry(s, t string) error {
	if p.pending != nil {
		// Second line: FileSiz MemSiz Flags Align.
		nums, flags, err := p.fields(strings.Fields(t), 2)
		if err != nil {
			return err
		}
		ph := p.pending
		p.pending = nil
		ph.Filesz, ph.Memsz, ph.Flags, ph.Align = nums[0], nums[1], flags, nums[2]
		p.progs = append(p.progs, *ph)
		return nil
	}
	// readelf prints the type as "  %-14.14s " (names may hold spaces, as
	// in "<unknown>: 6474e553"); fall back to the first word.
	var typ, rest string
	if len(s) > 17 && s[:2] == "  " && s[16] == ' ' && s[2] != ' ' {
		typ, rest = strings.TrimSpace(s[2:16]), s[17:]
	} else {
		typ, rest, _ = strings.Cut(t, " ")
	}
	ph := elf.ProgHeader{Type: progType(typ)}
	toks := strings.Fields(rest)
	lay := p.layout
	if lay == layoutUnknown {
		lay = layoutOneLine
		if len(toks) == 3 {
			lay = layoutTwoLine
		}
	}
	if lay == layoutTwoLine {
		if len(toks) != 3 {
			return p.errf("want Offset VirtAddr PhysAddr, found %q", rest)
		}
		var v [3]uint64
		for i, tok := range toks {
			n, err := parseNum(tok)
			if err != nil {
				return p.errf("%s program header: %v", typ, err)
			}
			v[i] = n
		}
		ph.Off, ph.Vaddr, ph.Paddr = v[0], v[1], v[2]
		p.pending = &ph
		return nil
	}
	nums, flags, err := p.fields(toks, 5)
	if err != nil {
		return err
	}
	ph.Off, ph.Vaddr, ph.Paddr, ph.Filesz, ph.Memsz = nums[0], nums[1], nums[2], nums[3], nums[4]
	ph.Flags, ph.Align = flags, nums[5]
	p.progs = append(p.progs, ph)
	return nil
}

// fields parses n numbers, the flag letters (0 to 3 words made of R, W, E)
// and the alignment; it returns the n numbers followed by the alignment.
func (p *readelfParser) fields(toks []string, n int) ([]uint64, elf.ProgFlag, error) {
	if len(toks) < n+1 {
		return nil, 0, p.errf("want %d numbers, flags and alignment, found %d fields", n, len(toks))
	}
	nums := make([]uint64, 0, n+1)
	for _, tok := range append(toks[:n:n], toks[len(toks)-1]) {
		v, err := parseNum(tok)
		if err != nil {
			return nil, 0, p.errf("%v", err)
		}
		nums = append(nums, v)
	}
	var flags elf.ProgFlag
	letters := 0
	for _, tok := range toks[n : len(toks)-1] {
		for _, c := range tok {
			letters++
			switch c {
			case 'R':
				flags |= elf.PF_R
			case 'W':
				flags |= elf.PF_W
			case 'E':
				flags |= elf.PF_X
			default:
				return nil, 0, p.errf("bad flags %q", tok)
			}
		}
	}
	if letters > 3 {
		return nil, 0, p.errf("more than three flag letters")
	}
	return nums, flags, nil
}

// parseNum parses readelf's numbers: 0x-prefixed hex, or a plain 0 (as
// "%#lx" prints zero).
func parseNum(tok string) (uint64, error) {
	if h, ok := strings.CutPrefix(tok, "0x"); ok && h != "" && h[0] != '+' && h[0] != '-' && h[0] != '_' {
		if v, err := strconv.ParseUint(h, 16, 64); err == nil {
			return v, nil
		} else if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("number %q overflows 64 bits", tok)
		}
	} else if tok == "0" {
		return 0, nil
	}
	return 0, fmt.Errorf("bad number %.40q", tok)
}

// progType maps a readelf type name to a program header type.
func progType(name string) elf.ProgType {
	if t, ok := readelfTypes[name]; ok {
		return t
	}
	return TypeUnknown
}
