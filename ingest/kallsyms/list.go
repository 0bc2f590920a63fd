package kallsyms

import (
	"fmt"
	"io"
	"iter"
	"strings"
	"unsafe"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/internal/prefault"
	"github.com/kmapindex/kmapindex/internal/regular"
)

// A List holds the symbols of a kallsyms file in file order, compactly:
// 17 bytes a symbol plus its name field, against 48 bytes and the whole
// line for a []Symbol over the file's text. A report holds /proc/kallsyms
// (100k+ symbols) from its start until the kernel's tables are made; as
// a []Symbol that, with the garbage of reading it, took more memory than
// all of perf report on a small recording. The zero value is an empty
// list. A List is immutable once read and safe for concurrent use.
type List struct {
	n      int
	blocks []*listBlock
	// pages hold the name fields (name, and "\t[module]" if any), each
	// within one page; a page is never written again below its length.
	pages [][]byte
	zero  bool // every address is 0
	// tagged counts the symbols with a module tag.
	tagged int
	// long holds the lengths of name fields of longLen bytes or more
	// (only NewList's can be), by symbol.
	long map[int]longField
}

// longField is the lengths of a long name field and of the name in it.
type longField struct{ field, name int }

// longLen marks a name field whose lengths are in List.long.
const longLen = 1<<16 - 1

const (
	listBlockLen = 4096
	// PageBits sizes the pages names are kept in (see NameRef): a name
	// field read from a file is < KsymNameLen bytes and fits any page (one
	// NewList is given beyond a page's size gets a page of its own), and
	// a MaxFileSize file's names fit the 2^16 pages a ref can name.
	PageBits = 16
	pageSize = 1 << PageBits
)

// listBlock holds listBlockLen symbols: fixed arrays, so a list grows
// without copying (a slice that doubles leaves garbage the size of the
// data behind, and a report's collector does not run that early).
type listBlock struct {
	addr [listBlockLen]uint64
	ref  [listBlockLen]uint32 // page<<PageBits | offset of the name field
	n    [listBlockLen]uint16 // name field length; longLen: see List.long
	name [listBlockLen]uint16 // the name's length in it (up to the first tab)
	typ  [listBlockLen]byte
}

// Len returns the number of symbols.
func (l *List) Len() int {
	if l == nil {
		return 0
	}
	return l.n
}

// Addr returns symbol i's address.
func (l *List) Addr(i int) uint64 { return l.blocks[i/listBlockLen].addr[i%listBlockLen] }

// Type returns symbol i's type byte.
func (l *List) Type(i int) byte { return l.blocks[i/listBlockLen].typ[i%listBlockLen] }

// field returns symbol i's name field: the name, then a tab and the
// module tag as the file has it, if any.
func (l *List) field(i int) string {
	n, _ := l.lens(i)
	if n == 0 {
		return ""
	}
	ref := l.blocks[i/listBlockLen].ref[i%listBlockLen]
	page := l.pages[ref>>PageBits]
	return unsafe.String(&page[ref&(pageSize-1)], n) // never written again
}

// lens returns the lengths of symbol i's name field and of its name.
func (l *List) lens(i int) (field, name int) {
	b := l.blocks[i/listBlockLen]
	f := b.n[i%listBlockLen]
	if f == longLen {
		lf := l.long[i]
		return lf.field, lf.name
	}
	return int(f), int(b.name[i%listBlockLen])
}

// NameRef returns where symbol i's name lies in NamePages: in page
// ref>>PageBits at offset ref&(1<<PageBits-1), n bytes. A symbol table
// can name symbols from the list's memory this way, without a copy.
func (l *List) NameRef(i int) (ref uint32, n int) {
	_, n = l.lens(i)
	return l.blocks[i/listBlockLen].ref[i%listBlockLen], n
}

// Name returns symbol i's name (At(i).Name, without looking for its
// end).
func (l *List) Name(i int) string {
	_, n := l.lens(i)
	return l.field(i)[:n]
}

// Module returns symbol i's module (At(i).Module).
func (l *List) Module(i int) string {
	_, module := l.split(i)
	return module
}

// split returns symbol i's name and module tag, as splitField.
func (l *List) split(i int) (name, module string) {
	f := l.field(i)
	_, n := l.lens(i)
	if n == len(f) {
		return f, ""
	}
	return f[:n], stripBrackets(f[n+1:])
}

// NamePages returns the pages NameRef points into. Their text never
// changes.
func (l *List) NamePages() []string {
	pages := make([]string, len(l.pages))
	for i, p := range l.pages {
		pages[i] = unsafe.String(unsafe.SliceData(p), len(p))
	}
	return pages
}

// At returns symbol i (0 <= i < Len). Its strings share the list's
// memory: no allocation.
func (l *List) At(i int) Symbol {
	name, module := l.split(i)
	return Symbol{Addr: l.Addr(i), Type: l.Type(i), Name: name, Module: module}
}

// TaggedName returns symbol i's name as perf keeps it from the file: the
// name, and for a module symbol a tab and "[module]". It allocates only
// when the file's tag lacked the brackets.
func (l *List) TaggedName(i int) string {
	f := l.field(i)
	name, module := l.split(i)
	if module == "" {
		return name
	}
	if len(f) == len(name)+len(module)+3 { // the file's tag had them
		return f
	}
	return name + "\t[" + module + "]"
}

// All returns an iterator over the symbols in file order.
func (l *List) All() iter.Seq[Symbol] {
	return func(yield func(Symbol) bool) {
		for i := range l.Len() {
			if !yield(l.At(i)) {
				return
			}
		}
	}
}

// Symbols returns the symbols as a slice (sharing the list's memory).
func (l *List) Symbols() []Symbol {
	if l.Len() == 0 {
		return nil
	}
	out := make([]Symbol, l.n)
	for i := range out {
		out[i] = l.At(i)
	}
	return out
}

// Landmarks is [Landmarks] over the list.
func (l *List) Landmarks() index.Landmarks { return landmarks(l.All()) }

// FunctionStart is [FunctionStart] over the list.
func (l *List) FunctionStart(name string) (uint64, bool) { return functionStart(l.All(), name) }

// Untagged returns the number of symbols without a module tag: the
// kernel's own.
func (l *List) Untagged() int {
	if l == nil {
		return 0
	}
	return l.n - l.tagged
}

// Restricted is [Restricted] over the list.
func (l *List) Restricted() bool { return l.Len() > 0 && l.zero }

// NewList returns the list of syms, in their order. Their names must
// total less than 4 GiB (a file ReadList accepts has at most 1 GiB).
func NewList(syms []Symbol) *List {
	var w listWriter
	for _, s := range syms {
		field := s.Name
		if s.Module != "" {
			field += "\t[" + s.Module + "]"
		}
		w.add(s.Addr, s.Type, field)
	}
	if w.l == nil {
		return &List{}
	}
	return w.l
}

// listWriter appends symbols to a List.
type listWriter struct{ l *List }

func (w *listWriter) add(addr uint64, typ byte, field string) {
	if w.l == nil {
		w.l = &List{zero: true}
	}
	l := w.l
	if l.n%listBlockLen == 0 {
		// Blocks and name pages are faulted in whole (prefault): 121k
		// symbols faulted 1,400 times, most of a small report's faults.
		blk := make([]listBlock, 1)
		prefault.Slice(blk)
		l.blocks = append(l.blocks, &blk[0])
	}
	b, j := l.blocks[l.n/listBlockLen], l.n%listBlockLen
	b.addr[j], b.typ[j] = addr, typ
	name := field
	if j := strings.IndexByte(field, '\t'); j >= 0 {
		name = field[:j]
		l.tagged++
	}
	if len(field) < longLen {
		b.n[j], b.name[j] = uint16(len(field)), uint16(len(name))
	} else {
		b.n[j] = longLen
		if l.long == nil {
			l.long = make(map[int]longField)
		}
		l.long[l.n] = longField{len(field), len(name)}
	}
	if addr != 0 {
		l.zero = false
	}
	if len(field) > 0 {
		p := len(l.pages) - 1
		if p < 0 || len(l.pages[p])+len(field) > pageSize {
			pg := make([]byte, 0, pageSize)
			prefault.Slice(pg)
			l.pages = append(l.pages, pg)
			p++
		}
		b.ref[j] = uint32(p)<<PageBits | uint32(len(l.pages[p]))
		l.pages[p] = append(l.pages[p], field...)
	}
	l.n++
}

// ReadListFile reads and parses the kallsyms file at path into a List.
// Errors name the file.
func ReadListFile(path string) (*List, error) {
	f, err := regular.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l, err := ReadList(f)
	if err != nil {
		return nil, withFile(err, path)
	}
	return l, nil
}

// ReadList parses all of r into a List, as Parse does. It reads at most
// MaxFileSize bytes, in chunks a goroutine reads ahead while the lines of
// those before are parsed (the kernel makes /proc/kallsyms as it is read,
// 4 KiB a call: parsing behind it takes the parse off the time to the
// symbols); the chunks' buffers are reused once their names are copied.
func ReadList(r io.Reader) (*List, error) { return readList(r, readAllChunk) }

// readList is ReadList reading chunks of chunkSize bytes.
func readList(r io.Reader, chunkSize int) (*List, error) {
	const ahead = 4
	chunks := make(chan []byte, ahead)
	free := make(chan []byte, ahead+2)
	done := make(chan struct{})
	defer close(done)
	var readErr error // set before chunks is closed
	go func() {
		defer close(chunks)
		total := 0
		for {
			var buf []byte
			select {
			case buf = <-free:
			default:
				buf = make([]byte, chunkSize)
			}
			n, err := io.ReadFull(r, buf)
			if total += n; total > MaxFileSize {
				readErr = fmt.Errorf("more than %d bytes: not a kallsyms file", MaxFileSize)
				return
			}
			if n > 0 {
				select {
				case chunks <- buf[:n]:
				case <-done:
					return
				}
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return
			}
			if err != nil {
				readErr = err
				return
			}
		}
	}()
	var w listWriter
	line := 1
	var partial []byte // a line begun in an earlier chunk
	for chunk := range chunks {
		text := unsafe.String(&chunk[0], len(chunk)) // read only until the buffer is freed below
		if partial != nil {
			b, rest, ok := strings.Cut(text, "\n")
			partial = append(partial, b...)
			if ok {
				text = rest
				if err := w.addLine(unsafe.String(&partial[0], len(partial)), line); err != nil {
					return nil, err
				}
				line++
				partial = nil
			} else {
				text = ""
			}
		}
		for len(text) > 0 {
			j := strings.IndexByte(text, '\n')
			if j < 0 {
				partial = append(make([]byte, 0, 2*len(text)+64), text...)
				break
			}
			b := text[:j]
			text = text[j+1:]
			if err := w.addLine(b, line); err != nil {
				return nil, err
			}
			line++
		}
		select {
		case free <- chunk[:cap(chunk)]:
		default:
		}
	}
	if readErr != nil {
		return nil, readErr
	}
	if len(partial) > 0 { // the last line, without its newline
		if err := w.addLine(unsafe.String(&partial[0], len(partial)), line); err != nil {
			return nil, err
		}
	}
	if w.l == nil {
		return &List{}, nil
	}
	return w.l, nil
}

// addLine parses line number n of the input, b without its newline, and
// adds its symbol if it has one.
func (w *listWriter) addLine(b string, n int) error {
	// A line longer than Parse's buffer is, for Parse, a truncated one.
	long := len(b)+1 > readBufSize
	if long {
		b = b[:readBufSize]
	}
	addr, typ, field, ok, err := parseLine(b, long)
	if err != nil {
		return &ParseError{Line: n, Err: err}
	}
	if ok {
		w.add(addr, typ, field)
	}
	return nil
}
