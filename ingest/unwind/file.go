package unwind

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"
)

// File is one binary's unwind information and contents, as perf's DSO
// data gives them to libunwind: .eh_frame_hdr's table and the .eh_frame
// it points into, .debug_frame, the ELF type and load base, and reads of
// the file by offset. Safe for concurrent use.
type File struct {
	r       io.ReaderAt
	size    int64
	exec    bool   // ET_EXEC: .debug_frame lookups use base 0
	textOff uint64 // .text's sh_addr - sh_offset
	elfBase uint64 // the first PT_LOAD's p_vaddr, page-aligned down
	loads   []elf.ProgHeader

	// From .eh_frame_hdr (hdrErr says why there is none): its address,
	// the table's address and its number of entries; eh holds the bytes
	// the table and the FDEs are read from, addressed by vaddr.
	hdrErr  error
	hdrAddr uint64
	table   uint64
	count   uint64
	eh      *section

	debug *debugFrame // nil: no .debug_frame

	mu   sync.RWMutex
	fdes map[uint64]fdeResult // parsed FDEs by address
	rows sync.Map             // *rowInfo by address: ehRow's answers
	nrow atomic.Int64         // entries in rows, bounded by maxRows
}

// maxRows bounds the rows a File keeps (about 300 bytes each).
const maxRows = 1 << 18

// rowInfo is what the unwind needs of the CFI at one address: the row
// (err: the CFA programs failed), the section its expressions are in,
// and whether its CIE marks a signal frame; lookupErr says why there is
// no FDE.
type rowInfo struct {
	row  row
	live uint32 // the registers whose rule is not "same value", a bit each
	// inPlace says apply may update a frame's locations in place: no
	// live rule is an expression (which reads the frame's locations as
	// they were) or names a register out of range (an error, after
	// which the frame must be as it was).
	inPlace   bool
	sec       *section
	signal    bool
	err       error
	lookupErr error
}

// rowInfo.live has a bit per register.
var _ [32 - nRegs]struct{}

// setLive sets r.live from r.row.
func (r *rowInfo) setLive() {
	r.live, r.inPlace = 0, true
	for i, rl := range r.row.regs {
		if rl.where != whereSame {
			r.live |= 1 << i
		}
		switch rl.where {
		case whereExpr, whereValExpr:
			r.inPlace = false
		case whereReg:
			r.inPlace = r.inPlace && rl.val < nRegs
		}
	}
}

// ehRow returns the row at vaddr pc through .eh_frame_hdr, computed once
// per address; rem is scratch space for the remember_state stack.
func (f *File) ehRow(pc uint64, rem *[]row) *rowInfo {
	if r, ok := f.rows.Load(pc); ok {
		return r.(*rowInfo)
	}
	r := &rowInfo{sec: f.eh}
	fd, err := f.lookupEH(pc)
	if err != nil {
		r.lookupErr = err
	} else {
		r.signal = fd.cie.signal
		r.row, *rem, r.err = rowAt(f.eh, fd, pc, nil, *rem)
		r.setLive()
	}
	if f.nrow.Add(1) <= maxRows {
		f.rows.Store(pc, r)
	}
	return r
}

type fdeResult struct {
	f   fde
	err error
}

// errNoHdr is perf's -EINVAL from read_unwind_spec_eh_frame: no
// .eh_frame_hdr section, or a header it cannot read.
var errNoHdr = errors.New("unwind: no usable .eh_frame_hdr")

// Open reads the unwind information of the ELF file at path. debugPath,
// when not empty, names a separate debug file searched for .debug_frame
// when path has none (perf's symsrc file and debuglink). The file stays
// open for reads: Close it when done.
func Open(path, debugPath string) (*File, error) {
	osf, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := osf.Stat()
	if err != nil {
		osf.Close()
		return nil, err
	}
	f, err := newFile(osf, st.Size())
	if err != nil {
		osf.Close()
		return nil, err
	}
	if f.debug == nil && debugPath != "" {
		f.debug = loadDebugFrameFile(debugPath)
	}
	return f, nil
}

// NewFile reads the unwind information of an ELF image held in memory
// (the vdso perf copies from its own process).
func NewFile(image []byte) (*File, error) {
	return newFile(bytes.NewReader(image), int64(len(image)))
}

// Close closes the underlying file when Open opened it.
func (f *File) Close() error {
	if c, ok := f.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func newFile(r io.ReaderAt, size int64) (*File, error) {
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, err
	}
	if ef.Class != elf.ELFCLASS64 || ef.Data != elf.ELFDATA2LSB {
		return nil, errors.New("unwind: not a 64-bit little-endian ELF file")
	}
	f := &File{r: r, size: size, exec: ef.Type == elf.ET_EXEC, fdes: make(map[uint64]fdeResult)}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			if len(f.loads) == 0 {
				f.elfBase = p.Vaddr &^ 0xfff // elf_base_address: p_vaddr & -getpagesize()
			}
			f.loads = append(f.loads, p.ProgHeader)
		}
	}
	if t := ef.Section(".text"); t != nil {
		f.textOff = t.Addr - t.Offset
	}
	f.hdrErr = f.readHdr(ef)
	f.debug = loadDebugFrame(ef)
	return f, nil
}

// readHdr reads .eh_frame_hdr as perf's unwind_spec_ehframe does and
// loads the bytes its table and FDEs lie in.
func (f *File) readHdr(ef *elf.File) error {
	hs := ef.Section(".eh_frame_hdr")
	if hs == nil || hs.Offset == 0 {
		return errNoHdr
	}
	var hdr [20]byte // struct eh_frame_hdr up to data[]
	if n, _ := f.r.ReadAt(hdr[:], int64(hs.Offset)); n != len(hdr) {
		return errNoHdr
	}
	p := 4
	if _, ok := hdrValue(hdr[:], &p, hdr[1]); !ok { // eh_frame_ptr, unused
		return errNoHdr
	}
	count, ok := hdrValue(hdr[:], &p, hdr[2])
	if !ok {
		return errNoHdr
	}
	f.hdrAddr, f.table, f.count = hs.Addr, hs.Addr+uint64(p), count
	lo, hi := hs.Addr, hs.Addr+hs.Size
	off := hs.Offset
	if es := ef.Section(".eh_frame"); es != nil && es.Type != elf.SHT_NOBITS && es.Addr-es.Offset == hs.Addr-hs.Offset {
		if es.Addr < lo {
			lo, off = es.Addr, es.Offset
		}
		hi = max(hi, es.Addr+es.Size)
	}
	if table := f.table + 8*count; count < 1<<28 && table > hi {
		hi = table // a table longer than its section: read what perf would
	}
	data := make([]byte, hi-lo)
	n, _ := f.r.ReadAt(data, int64(off))
	f.eh = &section{name: ".eh_frame", addr: lo, data: data[:n]}
	return nil
}

// hdrValue is perf's __dw_read_encoded_value over the header: omit,
// pointer-sized, and 4- or 8-byte values, absolute or pc-relative.
func hdrValue(b []byte, p *int, enc uint8) (uint64, bool) {
	size := 0
	switch {
	case enc == peOmit:
		return 0, true
	case enc == 0x00:
		size = 8
	case enc&0x70 != 0 && enc&0x70 != pePcrel:
		return 0, false
	default:
		if enc&0x07 == 0 {
			enc |= peUdata4
		}
		switch enc & 0x0f {
		case peUdata4, peSdata4:
			size = 4
		case peUdata8, peSdata8:
			size = 8
		default:
			return 0, false
		}
	}
	if *p+size > len(b) {
		return 0, false
	}
	var v uint64
	if size == 4 {
		v = uint64(binary.LittleEndian.Uint32(b[*p:]))
	} else {
		v = binary.LittleEndian.Uint64(b[*p:])
	}
	*p += size
	return v, true
}

// TextOffset is the .text section's address minus its file offset
// (perf's dso->text_offset): a file offset plus it is the address
// addr2line takes (map__rip_2objdump).
func (f *File) TextOffset() uint64 { return f.textOff }

// word reads 8 bytes of the file at offset off (perf's
// dso__data_read_offset).
func (f *File) word(off uint64) (uint64, bool) {
	var b [8]byte
	if off > uint64(f.size) || off+8 > uint64(f.size) {
		return 0, false
	}
	if n, _ := f.r.ReadAt(b[:], int64(off)); n != 8 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[:]), true
}

// vaddrWord reads 8 bytes at an address of the binary, through its
// PT_LOAD segments (the indirect pointers of CIEs).
func (f *File) vaddrWord(addr uint64) (uint64, bool) {
	for _, p := range f.loads {
		if addr >= p.Vaddr && addr-p.Vaddr < p.Filesz {
			return f.word(p.Off + addr - p.Vaddr)
		}
	}
	return 0, false
}

// lookupEH finds the FDE for vaddr pc through .eh_frame_hdr's table
// (libunwind's remote_lookup and dwarf_search_unwind_table): the last
// entry starting at or before pc, whose FDE must then cover pc.
func (f *File) lookupEH(pc uint64) (*fde, error) {
	if f.hdrErr != nil {
		return nil, f.hdrErr
	}
	rel := int32(pc - f.hdrAddr)
	lo, hi := uint64(0), f.count
	for lo < hi {
		mid := (lo + hi) / 2
		start, ok := f.tableS32(mid * 8)
		if !ok {
			return nil, &CFIError{Section: ".eh_frame_hdr", Offset: f.table + mid*8 - f.hdrAddr, What: "table entry past the end"}
		}
		if rel < start {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if hi == 0 {
		return nil, ErrNoInfo
	}
	fdeOff, ok := f.tableS32((hi-1)*8 + 4)
	if !ok {
		return nil, &CFIError{Section: ".eh_frame_hdr", Offset: f.table + (hi-1)*8 + 4 - f.hdrAddr, What: "table entry past the end"}
	}
	fd, err := f.fdeAt(f.hdrAddr + uint64(int64(fdeOff)))
	if err != nil {
		return nil, err
	}
	if pc < fd.start || pc >= fd.end {
		return nil, ErrNoInfo
	}
	return fd, nil
}

func (f *File) tableS32(off uint64) (int32, bool) {
	at := f.table + off - f.eh.addr
	if f.table+off < f.eh.addr || at+4 > uint64(len(f.eh.data)) {
		return 0, false
	}
	return int32(binary.LittleEndian.Uint32(f.eh.data[at:])), true
}

// fdeAt parses (once) the FDE at address addr of .eh_frame.
func (f *File) fdeAt(addr uint64) (*fde, error) {
	f.mu.RLock()
	r, ok := f.fdes[addr]
	f.mu.RUnlock()
	if !ok {
		r = f.parseFDEAt(addr)
		f.mu.Lock()
		f.fdes[addr] = r
		f.mu.Unlock()
	}
	if r.err != nil {
		return nil, r.err
	}
	return &r.f, nil
}

func (f *File) parseFDEAt(addr uint64) fdeResult {
	if addr < f.eh.addr || addr-f.eh.addr >= uint64(len(f.eh.data)) {
		return fdeResult{err: &CFIError{Section: ".eh_frame", Offset: addr - f.eh.addr, What: "FDE outside .eh_frame"}}
	}
	fd, ok, err := parseFDE(f.eh, addr-f.eh.addr, false, f.vaddrWord)
	switch {
	case err != nil:
		return fdeResult{err: err}
	case !ok:
		return fdeResult{err: ErrNoInfo} // a terminator or a CIE: libunwind finds no FDE
	}
	return fdeResult{f: fd}
}

// debugFrame is a .debug_frame section and its index, built as
// libunwind's debug_frame_index_make: every FDE that parses, by its start
// truncated to 32 bits, sorted.
type debugFrame struct {
	sec      *section
	firstVA  uint64 // the first PT_LOAD's p_vaddr, for the load offset
	starts   []int32
	offs     []uint64
	fdeCache sync.Map // offset → fdeResult
}

func loadDebugFrameFile(path string) *debugFrame {
	ef, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer ef.Close()
	return loadDebugFrame(ef)
}

func loadDebugFrame(ef *elf.File) *debugFrame {
	s := ef.Section(".debug_frame")
	if s == nil || s.Offset == 0 || s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_COMPRESSED != 0 {
		return nil // libunwind 1.6 as Debian builds it (without zlib) skips a compressed one
	}
	data, err := s.Data()
	if err != nil || len(data) == 0 {
		return nil
	}
	d := &debugFrame{sec: &section{name: ".debug_frame", data: data}}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			d.firstVA = p.Vaddr
			break
		}
	}
	d.index()
	return d
}

// index lists the FDEs of the section, sorted by start.
func (d *debugFrame) index() {
	type ent struct {
		start int32
		off   uint64
	}
	var es []ent
	for off := uint64(0); off < uint64(len(d.sec.data)); {
		c := d.sec.at(off)
		n := uint64(c.u32("length"))
		if c.err != nil || n == 0 {
			break
		}
		next := c.off + n
		if n == 0xffffffff {
			n = c.u64("length")
			next = c.off + n
		}
		if fd, ok, err := parseFDE(d.sec, off, true, nil); err == nil && ok {
			es = append(es, ent{int32(fd.start), off})
		}
		if c.err != nil || next <= off {
			break
		}
		off = next
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].start < es[j].start })
	for _, e := range es {
		d.starts = append(d.starts, e.start)
		d.offs = append(d.offs, e.off)
	}
}

// lookup is dwarf_search_unwind_table over the .debug_frame index, with
// perf's segbase (0 for an ET_EXEC file, else the map's start) and
// libunwind's load offset (segbase minus the first PT_LOAD's p_vaddr):
// the index is searched at ip - segbase - load offset and the FDE's
// range is shifted by segbase + load offset. ip is a process address.
func (d *debugFrame) lookup(ip, segbase uint64) (*fde, error) {
	load := segbase - d.firstVA
	rel := int32(ip - segbase - load)
	i := sort.Search(len(d.starts), func(i int) bool { return d.starts[i] > rel })
	if i == 0 {
		return nil, ErrNoInfo
	}
	fd, err := d.fdeAt(d.offs[i-1])
	if err != nil {
		return nil, err
	}
	shifted := *fd
	shifted.start += segbase + load
	shifted.end += segbase + load
	if ip < shifted.start || ip >= shifted.end {
		return nil, ErrNoInfo
	}
	return &shifted, nil
}

func (d *debugFrame) fdeAt(off uint64) (*fde, error) {
	if r, ok := d.fdeCache.Load(off); ok {
		res := r.(fdeResult)
		return &res.f, res.err
	}
	fd, ok, err := parseFDE(d.sec, off, true, nil)
	if err == nil && !ok {
		err = ErrNoInfo
	}
	d.fdeCache.Store(off, fdeResult{fd, err})
	return &fd, err
}

// Cache holds the Files of the binaries an unwind needs, each opened
// once; safe for concurrent use.
type Cache struct {
	mu    sync.Mutex
	files map[string]*cacheEntry
}

type cacheEntry struct {
	once sync.Once
	f    *File
	err  error
}

// Get returns the File of path (with debugPath as for Open), opening it
// on first use; nil when it cannot be read, as every later call says.
func (c *Cache) Get(path, debugPath string) *File {
	return c.get(path, func() (*File, error) { return Open(path, debugPath) })
}

// GetImage returns the File of an in-memory image stored under key.
func (c *Cache) GetImage(key string, image func() []byte) *File {
	return c.get(key, func() (*File, error) {
		img := image()
		if img == nil {
			return nil, errors.New("unwind: no image")
		}
		return NewFile(img)
	})
}

func (c *Cache) get(key string, open func() (*File, error)) *File {
	c.mu.Lock()
	if c.files == nil {
		c.files = make(map[string]*cacheEntry)
	}
	e := c.files[key]
	if e == nil {
		e = new(cacheEntry)
		c.files[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.f, e.err = open() })
	return e.f
}

// Close closes every file the cache opened.
func (c *Cache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.files {
		if e.f != nil {
			e.f.Close()
		}
	}
	c.files = nil
}
