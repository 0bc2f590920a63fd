package unwind

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// DefaultMaxStack is perf script's default depth (PERF_MAX_STACK_DEPTH).
const DefaultMaxStack = 127

// Mapping is the map holding an address in the sampled process, as
// perf's thread__find_map finds it (user maps), and the file perf would
// read for it; File is nil when there is none to read (anonymous memory,
// [stack], a binary not present).
type Mapping struct {
	Start, End, Pgoff uint64
	// Base is the start minus the page offset of the lowest map of the
	// same DSO in the thread's maps, which perf takes as the DSO's load
	// address (read_unwind_spec_eh_frame).
	Base uint64
	File *File
}

// Finder finds the map of an address.
type Finder func(addr uint64) (Mapping, bool)

// Sample is what a --call-graph dwarf sample carries for the unwind.
type Sample struct {
	Regs Regs
	// Stack is the copied user stack from SP, its dynamic size (the
	// sample's dyn_size) long.
	Stack []byte
}

// Unwinder unwinds samples. The zero value uses DefaultMaxStack. Not
// safe for concurrent use; cheap to make one per goroutine.
type Unwinder struct {
	// MaxStack bounds the frames returned, the sampled IP included
	// (perf script's --max-stack).
	MaxStack int
	// DebugFrame consults .debug_frame where .eh_frame_hdr gives no
	// answer, as perf does when built with libunwind's debug-frame
	// support. Debian's perf 6.1 is not (NO_LIBUNWIND_DEBUG_FRAME: its
	// libunwind exports no dwarf_find_debug_frame), so by default a
	// binary without .eh_frame_hdr ends the unwind.
	DebugFrame bool
	// Cache is the register-state cache of the sampled process's address
	// space that the next Unwind consults and fills, as libunwind's steps
	// do perf's (see RegCache); nil: none.
	Cache *RegCache

	s    *Sample
	find Finder
	rem  []row // remember_state stack, reused
	stop error // why the last unwind ended
	fr   frame // the cursor, reused

	// rows caches procInfo's answers through .eh_frame_hdr by binary
	// and address, direct-mapped: a File's own cache is shared and
	// slower to consult.
	rows *[rowSlots]rowSlot
	// pages caches pages of the binaries whose words the unwind reads
	// (the PLT check reads two at every pc without CFI), direct-mapped,
	// as perf's dso data cache does: a pread each took a quarter of the
	// CPU of a --call-graph dwarf -a script (pprof, 0.97 of 3.73 s).
	pages *[pageSlots]filePage
}

// pageSlots is the size of an Unwinder's page cache (a power of two);
// pageBits the size of its pages.
const (
	pageSlots = 1 << 6
	pageBits  = 12
)

// filePage is a page of a binary's file: its bytes up to n (fewer at
// the end of the file).
type filePage struct {
	file *File
	page uint64
	n    int
	b    [1 << pageBits]byte
}

// word is file.word through the page cache: 8 bytes of the file at
// offset off.
func (u *Unwinder) word(file *File, off uint64) (uint64, bool) {
	in := off & (1<<pageBits - 1)
	if in > 1<<pageBits-8 || off+8 > uint64(file.size) || off+8 < off {
		return file.word(off) // across pages, or past the end
	}
	if u.pages == nil {
		u.pages = new([pageSlots]filePage)
	}
	page := off >> pageBits
	p := &u.pages[(page^page>>6)&(pageSlots-1)]
	if p.file != file || p.page != page {
		n, _ := file.r.ReadAt(p.b[:], int64(page<<pageBits))
		p.file, p.page, p.n = file, page, n
	}
	if int(in)+8 > p.n {
		return 0, false
	}
	return binary.LittleEndian.Uint64(p.b[in:]), true
}

// rowSlots is the size of an Unwinder's row cache (a power of two).
const rowSlots = 1 << 12

type rowSlot struct {
	file *File
	pc   uint64
	r    *rowInfo
}

// Stop returns why the last Unwind ended: nil at the end of the chain
// (an undefined return address, a zero RBP location) or at the depth
// limit, else ErrNoMap, ErrNoInfo, ErrMemory, ErrBadReg, ErrBadFrame or
// a *CFIError.
func (u *Unwinder) Stop() error { return u.stop }

// locKind says where a register of a frame is (libunwind's dwarf_loc_t).
type locKind uint8

const (
	locNull locKind = iota // not available
	locReg                 // in the sampled register (a DWARF number)
	locMem                 // in memory at the address
	locVal                 // the value itself
)

type loc struct {
	kind locKind
	v    uint64
}

// frame is libunwind's x86_64 cursor: the frame's pc and CFA, where each
// register is, whether the next lookup backs up one byte, and whether
// the FDE last used was a signal frame's.
type frame struct {
	ip, cfa uint64
	locs    [nRegs]loc
	usePrev bool
	signal  bool
}

// Unwind returns the addresses perf's unwind__get_entries reports for s,
// innermost first, appended to dst: the sampled IP, then each caller's
// return address minus one (the address itself above a signal frame),
// zeros dropped. Without IP or SP in the sample there are none.
func (u *Unwinder) Unwind(s *Sample, find Finder, dst []uint64) []uint64 {
	max := u.MaxStack
	if max <= 0 {
		max = DefaultMaxStack
	}
	u.stop = nil
	ip, ok := s.Regs.Get(RegIP)
	if !ok {
		u.stop = ErrBadReg
		return dst
	}
	sp, ok := s.Regs.Get(RegSP)
	if !ok {
		u.stop = ErrBadReg
		return dst // unw_init_remote fails: perf reports nothing
	}
	u.s, u.find = s, find
	defer func() { u.s, u.find = nil, nil }()
	ips := append(dst, ip)
	f := &u.fr
	*f = frame{ip: ip, cfa: sp}
	for i := range f.locs {
		f.locs[i] = loc{locReg, uint64(i)}
	}
	for n := 1; n < max; n++ {
		r, err := u.step(f)
		if r <= 0 {
			u.stop = err
			break
		}
		pc := f.ip
		if !f.signal {
			pc--
		}
		ips = append(ips, pc)
	}
	// perf skips the zero entries as it reports them.
	out := ips[:len(dst)]
	for _, pc := range ips[len(dst):] {
		if pc != 0 {
			out = append(out, pc)
		}
	}
	return out
}

// Results of perf's access_mem as libunwind sees them.
const (
	memOK   = 0  // the word was read
	memSoft = 1  // a map holds the address but its file cannot be read: the word reads as 0
	memErr  = -1 // no map holds the address: the read fails
)

// memStatus is perf's access_mem: a word of the copied stack when it
// lies wholly before the stack's last 8 bytes, else 8 bytes of the file
// mapped at addr (access_dso_mem). A map whose file cannot be read there
// gives 0 with memSoft, which libunwind takes as success.
func (u *Unwinder) memStatus(addr uint64) (uint64, int) {
	sp, ok := u.s.Regs.Get(RegSP)
	if !ok || addr+8 < addr {
		return 0, memErr
	}
	end := sp + uint64(len(u.s.Stack))
	if addr < sp || addr+8 >= end {
		return u.fileWord(addr)
	}
	off := addr - sp
	b := u.s.Stack[off : off+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56, memOK
}

// mem reads a word as libunwind's callers do: only a memErr fails.
func (u *Unwinder) mem(addr uint64) (uint64, error) {
	v, st := u.memStatus(addr)
	if st < 0 {
		return 0, ErrMemory
	}
	return v, nil
}

// fileWord is access_dso_mem: the word at addr read from the file of the
// map holding it.
func (u *Unwinder) fileWord(addr uint64) (uint64, int) {
	m, ok := u.find(addr)
	if !ok {
		return 0, memErr
	}
	if m.File == nil {
		return 0, memSoft
	}
	v, ok := u.word(m.File, addr-m.Start+m.Pgoff)
	if !ok {
		return 0, memSoft
	}
	return v, memOK
}

// get is dwarf_get: the value at a location.
func (u *Unwinder) get(l loc) (uint64, error) {
	switch l.kind {
	case locReg:
		if l.v >= nRegs {
			return 0, ErrBadReg
		}
		v, ok := u.s.Regs.Get(dwToPerf[l.v])
		if !ok {
			return 0, ErrBadReg
		}
		return v, nil
	case locMem:
		return u.mem(l.v)
	case locVal:
		return l.v, nil
	}
	return 0, ErrBadReg
}

// env is the expression environment of one frame.
type env struct {
	u *Unwinder
	f *frame
}

// getReg is unw_get_reg: RSP reads as the CFA and RIP as the frame's pc.
func (e env) getReg(r uint64) (uint64, error) {
	switch r {
	case dwRSP:
		return e.f.cfa, nil
	case dwRIP:
		return e.f.ip, nil
	}
	return e.u.get(e.f.locs[r])
}

// readByte is libunwind's remote dwarf_readu8: the aligned word holding
// addr, shifted.
func (e env) readByte(addr uint64) (uint8, error) {
	w, err := e.u.mem(addr &^ 7)
	if err != nil {
		return 0, err
	}
	return uint8(w >> (8 * (addr & 7))), nil
}

// step is x86_64 unw_step: the DWARF step, or where the binary has no
// information for the pc, the PLT and frame-pointer guesses. It returns
// 1 for a new frame, 0 at the end of the chain, and an error.
func (u *Unwinder) step(f *frame) (int, error) {
	f.signal = false
	r, err := u.dwarfStep(f)
	if err != nil && !errors.Is(err, ErrNoInfo) {
		return 0, err
	}
	if err == nil {
		if f.locs[dwRBP].kind == locNull {
			f.ip = 0
			return 0, nil
		}
		return r, nil
	}
	return u.guess(f)
}

// dwarfStep is dwarf_step: find the row for the frame's pc and apply it.
func (u *Unwinder) dwarfStep(f *frame) (int, error) {
	if u.Cache != nil {
		if r := u.Cache.lookup(f.ip); r != nil { // find_reg_state's rs_lookup
			f.signal = r.signal
			f.usePrev = !r.signal
			return u.apply(f, r)
		}
	}
	pc := f.ip
	if f.usePrev {
		pc--
	}
	r, err := u.procInfo(pc)
	if err != nil {
		return 0, err
	}
	f.signal = r.signal // tdep_fetch_frame
	f.usePrev = !r.signal
	if r.err != nil {
		return 0, r.err
	}
	if u.Cache != nil {
		u.Cache.insert(f.ip, r) // rs_new, before the row is applied
	}
	return u.apply(f, r)
}

// procInfo is perf's find_proc_info, then the CFA programs: the row for
// pc from the binary mapped there, through .eh_frame_hdr (cached per
// binary and address), else .debug_frame.
func (u *Unwinder) procInfo(pc uint64) (*rowInfo, error) {
	m, ok := u.find(pc)
	if !ok || m.File == nil {
		return nil, ErrNoMap
	}
	file := m.File
	r := u.ehRow(file, pc-(m.Base-file.elfBase))
	if r.lookupErr == nil {
		return r, nil
	}
	if u.DebugFrame && file.debug != nil {
		segbase := m.Start
		if file.exec {
			segbase = 0
		}
		fd, err := file.debug.lookup(pc, segbase)
		if err != nil {
			return nil, err
		}
		dr := &rowInfo{signal: fd.cie.signal, sec: file.debug.sec}
		dr.row, u.rem, dr.err = rowAt(dr.sec, fd, pc, nil, u.rem)
		dr.setLive()
		return dr, nil
	}
	if errors.Is(r.lookupErr, errNoHdr) {
		return nil, ErrNoMap // perf's -EINVAL: the unwind ends
	}
	return nil, r.lookupErr
}

// ehRow is file.ehRow through the Unwinder's cache.
func (u *Unwinder) ehRow(file *File, pc uint64) *rowInfo {
	if u.rows == nil {
		u.rows = new([rowSlots]rowSlot)
	}
	sl := &u.rows[(pc^pc>>12)&(rowSlots-1)]
	if sl.file == file && sl.pc == pc && sl.r != nil {
		return sl.r
	}
	r := file.ehRow(pc, &u.rem)
	*sl = rowSlot{file, pc, r}
	return r
}

// apply is apply_reg_state: the CFA, then each register's location, then
// the caller's pc from the return-address column. r.live has a bit for
// each register whose rule is not "same value" (which leaves it as it
// is), in register order as apply_reg_state goes.
func (u *Unwinder) apply(f *frame, r *rowInfo) (int, error) {
	rw, sec := &r.row, r.sec
	prevIP, prevCFA := f.ip, f.cfa
	cfa, err := u.cfa(f, rw, sec)
	if err != nil {
		return 0, err
	}
	if r.inPlace {
		// The rules cannot fail nor read the old locations: no copy of
		// them (two of 272 bytes a frame: a DWARF script 0.665 -> 0.60 s).
		for m := r.live; m != 0; m &= m - 1 {
			i := bits.TrailingZeros32(m)
			plainLoc(&f.locs, i, rw.regs[i], cfa)
		}
		f.cfa = cfa
	} else {
		locs := f.locs
		for m := r.live; m != 0; m &= m - 1 {
			i := bits.TrailingZeros32(m)
			if err := u.regLoc(f, &locs, i, rw.regs[i], cfa, sec); err != nil {
				return 0, err
			}
		}
		f.locs, f.cfa = locs, cfa
	}
	if rw.ra >= nRegs {
		return 0, ErrBadReg
	}
	ret := 1
	if f.locs[rw.ra].kind == locNull {
		f.ip, ret = 0, 0
	} else if f.ip, err = u.get(f.locs[rw.ra]); err != nil {
		return 0, err
	}
	if f.ip == prevIP && f.cfa == prevCFA {
		return 0, ErrBadFrame
	}
	return ret, nil
}

// cfa computes the row's CFA.
func (u *Unwinder) cfa(f *frame, rw *row, sec *section) (uint64, error) {
	switch rw.cfa.where {
	case whereReg:
		if rw.cfa.val == dwRSP && rw.regs[dwRSP].where == whereSame {
			return f.cfa + rw.cfaOff, nil
		}
		v, err := env{u, f}.getReg(rw.cfa.val)
		return v + rw.cfaOff, err
	case whereExpr:
		v, isReg, err := evalExpr(sec, rw.cfa.val, 0, env{u, f})
		if err == nil && isReg {
			err = ErrBadFrame
		}
		return v, err
	}
	return 0, &CFIError{Section: sec.name, What: "no CFA rule"}
}

// plainLoc sets the location of register i by rule r, one that neither
// evaluates an expression nor fails (undefined, at CFA+N, in a register
// in range): regLoc's cases that apply also runs in place, where a call
// to regLoc per register (not inlined) cost a DWARF script 2-6 %.
func plainLoc(locs *[nRegs]loc, i int, r rule, cfa uint64) {
	switch r.where {
	case whereUndef:
		locs[i] = loc{}
	case whereCFARel:
		locs[i] = loc{locMem, cfa + r.val}
	case whereReg:
		locs[i] = locs[r.val]
	}
}

// regLoc sets the location of register i by rule r.
func (u *Unwinder) regLoc(f *frame, locs *[nRegs]loc, i int, r rule, cfa uint64, sec *section) error {
	switch r.where {
	case whereUndef, whereCFARel:
		plainLoc(locs, i, r, cfa)
	case whereReg:
		if r.val >= nRegs {
			return ErrBadReg
		}
		plainLoc(locs, i, r, cfa)
	case whereExpr, whereValExpr:
		v, isReg, err := evalExpr(sec, r.val, cfa, env{u, f})
		if err != nil {
			return err
		}
		switch {
		case r.where == whereValExpr:
			locs[i] = loc{locVal, v}
		case isReg:
			locs[i] = loc{locReg, v}
		default:
			locs[i] = loc{locMem, v}
		}
	}
	return nil
}

// guess is unw_step's path for a pc the binary's tables do not cover: a
// PLT entry (CFA = SP + 8, nothing saved), else a frame-pointer frame
// checked against the CFA, else the end.
func (u *Unwinder) guess(f *frame) (int, error) {
	prevIP, prevCFA := f.ip, f.cfa
	invalidPrevRIP := false
	ret := 0
	switch {
	case u.isPLT(f.ip):
		f.locs[dwRIP] = loc{locMem, f.cfa}
		f.cfa += 8
	case f.locs[dwRBP].kind == locNull:
		f.locs = [nRegs]loc{}
	default:
		var err error
		if invalidPrevRIP, err = u.framePointer(f); err != nil {
			return 0, err
		}
	}
	if f.locs[dwRBP].kind == locNull && !invalidPrevRIP {
		return 0, nil
	}
	if f.locs[dwRIP].kind != locNull {
		var err error
		if f.ip, err = u.get(f.locs[dwRIP]); err != nil {
			return 0, err
		}
		ret = 1
	} else {
		f.ip = 0
	}
	if f.ip == prevIP && f.cfa == prevCFA {
		return 0, ErrBadFrame
	}
	return ret, nil
}

// isPLT recognises a PLT entry at ip: jmp *x(%rip); push $n; jmp.
func (u *Unwinder) isPLT(ip uint64) bool {
	w0, err0 := u.mem(ip)
	w1, err1 := u.mem(ip + 8)
	return err0 == nil && err1 == nil &&
		w0&0xffff == 0x25ff && (w0>>48)&0xff == 0x68 && (w1>>24)&0xff == 0xe9
}

// framePointer is the frame-chain guess: RBP points at the saved RBP
// with the return address above it, if RBP lies a little above the CFA;
// when the pc itself cannot be read, the return address is taken from
// the top of the stack instead.
func (u *Unwinder) framePointer(f *frame) (invalidPrevRIP bool, err error) {
	rbp, err := u.get(f.locs[dwRBP])
	if err != nil {
		return false, err
	}
	_, st := u.memStatus(f.ip)
	invalidPrevRIP = st != memOK
	var rbpLoc, rspLoc, ripLoc loc
	if rbp != 0 || invalidPrevRIP {
		fixed := false
		if invalidPrevRIP {
			rsp, _ := u.get(f.locs[dwRSP])
			if newIP, st := u.memStatus(rsp); st == memOK {
				if _, st := u.memStatus(newIP); st == memOK {
					fixed = true
					f.cfa += 8
					rbpLoc, rspLoc, ripLoc = loc{locMem, rbp}, loc{locMem, rsp}, loc{locMem, rsp}
				}
			}
		}
		if !fixed {
			rbpLoc, rspLoc, ripLoc = loc{locMem, rbp}, loc{}, loc{locMem, rbp + 8}
			if _, st := u.memStatus(rbp); st < 0 || rbp < f.cfa || rbp-f.cfa > 0x4000 {
				ripLoc, rbpLoc = loc{}, loc{}
			}
			f.cfa += 16
		}
	}
	f.locs = [nRegs]loc{}
	f.locs[dwRBP], f.locs[dwRSP], f.locs[dwRIP] = rbpLoc, rspLoc, ripLoc
	f.usePrev = true
	return invalidPrevRIP, nil
}
