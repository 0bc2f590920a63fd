package index

import "fmt"

// Segment is one loadable program header of /proc/kcore: the kernel
// addresses [Vaddr, Vaddr+Size) are readable at file offset Offset.
type Segment struct {
	Vaddr, Size, Offset uint64
}

// End returns Vaddr + Size.
func (s Segment) End() uint64 { return s.Vaddr + s.Size }

// Contains reports whether Vaddr <= a < End.
func (s Segment) Contains(a uint64) bool { return s.Vaddr <= a && a < s.End() }

// FileOffset returns the kcore file offset of address a (which s contains).
func (s Segment) FileOffset(a uint64) uint64 { return s.Offset + (a - s.Vaddr) }

func (s Segment) String() string {
	return fmt.Sprintf("[%#x,%#x) off %#x", s.Vaddr, s.End(), s.Offset)
}

// Landmark is a kernel symbol address that may be absent from kallsyms.
type Landmark struct {
	Addr uint64
	OK   bool
}

// Landmarks are the kallsyms symbols that bound the kernel image.
type Landmarks struct {
	Text  Landmark // _text (function types T/t/W/w or A)
	Stext Landmark // _stext (function types)
	Etext Landmark // _etext (function types)
	Edata Landmark // _edata (any type)
	End   Landmark // _end (any type)
}

// KernelStart returns the kernel map start as perf finds it: _text, else
// _stext (machine__get_running_kernel_start).
func (l Landmarks) KernelStart() (uint64, bool) {
	if l.Text.OK {
		return l.Text.Addr, true
	}
	return l.Stext.Addr, l.Stext.OK
}

// TextAddr returns the address perf uses to pick the kcore replacement
// segment: _stext, else _text.
func (l Landmarks) TextAddr() (uint64, bool) {
	if l.Stext.OK {
		return l.Stext.Addr, true
	}
	return l.Text.Addr, l.Text.OK
}

// Module is one line of /proc/modules: the module "[Name]" occupies
// [Start, Start+Size).
type Module struct {
	Name  string
	Start uint64
	Size  uint64
	Line  int // the line of the modules file it came from; 0 when unknown
}

// Where names the module for an error message: its name and, when known,
// its line in the modules file.
func (m Module) Where() string {
	if m.Line > 0 {
		return fmt.Sprintf("%s (modules line %d)", m.Name, m.Line)
	}
	return m.Name
}

// KernelDSO is the DSO name of the host kernel and of all kcore maps.
const KernelDSO = "[kernel.kallsyms]"
