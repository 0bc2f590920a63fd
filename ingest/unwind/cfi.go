package unwind

// The registers libunwind tracks on x86_64 (DWARF_NUM_PRESERVED_REGS):
// DWARF numbers 0-15 (RAX RDX RCX RBX RSI RDI RBP RSP R8-R15) and 16, the
// return address (RIP).
const (
	nRegs  = 17
	dwRBP  = 6
	dwRSP  = 7
	dwRIP  = 16
	maxRem = 256 // remember_state depth: deeper programs are bad CFI
)

// where says how a register of the caller is found (libunwind's
// dwarf_where_t).
type where uint8

const (
	whereUndef   where = iota // not saved: the unwind ends if it is the return address
	whereSame                 // unchanged
	whereCFARel               // saved at CFA + val
	whereReg                  // in register val
	whereExpr                 // saved at the address an expression gives (val: its offset)
	whereValExpr              // the value an expression gives
)

// rule is one register's rule.
type rule struct {
	where where
	val   uint64
}

// row is the state a CFA program leaves: a rule per register, the CFA
// (a register plus an offset, or an expression) and the return-address
// column. Expression rules hold the expression's offset in sec.
type row struct {
	regs   [nRegs]rule
	cfa    rule   // whereReg (val: the register) or whereExpr; whereSame: never set
	cfaOff uint64 // added to the CFA register
	ra     uint64 // return-address column
}

// cie is a parsed Common Information Entry.
type cie struct {
	codeAlign, dataAlign uint64 // dataAlign is signed, kept as two's complement
	ra                   uint64
	fdeEnc, lsdaEnc      uint8
	sized, signal        bool
	instr, instrEnd      uint64 // its initial instructions, offsets in the section
}

// fde is a parsed Frame Description Entry: the pc range it covers and its
// instructions.
type fde struct {
	cie             cie
	start, end      uint64
	instr, instrEnd uint64
}

// parseCIE parses the CIE at off (libunwind's parse_cie): the 32- or
// 64-bit format, versions 1, 3 and 4, the augmentation letters z, L, R, P
// and S (an unknown letter ends the list when the augmentation is sized
// by 'z', else it is an error).
func parseCIE(sec *section, off uint64, debugFrame bool, mem func(uint64) (uint64, bool)) (cie, error) {
	c := sec.at(off)
	ci := cie{fdeEnc: peUdata8, lsdaEnc: peOmit}
	length := uint64(c.u32("CIE length"))
	var id uint64
	if length != 0xffffffff {
		ci.instrEnd = c.off + length
		id = uint64(c.u32("CIE id"))
		if debugFrame && id != 0xffffffff || !debugFrame && id != 0 {
			c.fail("not a CIE")
		}
	} else {
		length = c.u64("CIE length")
		ci.instrEnd = c.off + length
		id = c.u64("CIE id")
		if debugFrame && id != ^uint64(0) || !debugFrame && id != 0 {
			c.fail("not a CIE")
		}
	}
	version := c.u8("CIE version")
	if c.err == nil && version != 1 && (version < 3 || version > 4) {
		c.off--
		c.fail("unsupported CIE version")
	}
	augOff := c.off
	aug := c.cstring("CIE augmentation")
	if len(aug) > 4 {
		aug = aug[:4] // libunwind keeps the first four letters
	}
	ci.codeAlign = c.uleb("code alignment")
	ci.dataAlign = c.sleb("data alignment")
	if version == 1 {
		ci.ra = uint64(c.u8("return address column"))
	} else {
		ci.ra = c.uleb("return address column")
	}
	i := 0
	if len(aug) > 0 && aug[0] == 'z' {
		ci.sized = true
		c.uleb("augmentation length")
		i++
	}
letters:
	for ; i < len(aug) && c.err == nil; i++ {
		switch aug[i] {
		case 'L':
			ci.lsdaEnc = c.u8("LSDA encoding")
		case 'R':
			ci.fdeEnc = c.u8("FDE encoding")
		case 'P':
			enc := c.u8("personality encoding")
			c.encoded(enc, mem, "personality")
		case 'S':
			ci.signal = true
		default:
			if !ci.sized {
				c.failAt(augOff+uint64(i), "unknown augmentation")
			}
			break letters
		}
	}
	ci.instr = c.off
	if c.err != nil {
		return ci, c.err
	}
	return ci, nil
}

// parseFDE parses the FDE at off (dwarf_extract_proc_info_from_fde);
// ok is false for a zero terminator or a CIE found there.
func parseFDE(sec *section, off uint64, debugFrame bool, mem func(uint64) (uint64, bool)) (f fde, ok bool, err error) {
	c := sec.at(off)
	length := uint64(c.u32("FDE length"))
	var ciePtr, idAt uint64
	if length != 0xffffffff {
		if length == 0 && c.err == nil {
			return f, false, nil
		}
		f.instrEnd = c.off + length
		idAt = c.off
		v := c.u32("CIE pointer")
		if debugFrame && v == 0xffffffff || !debugFrame && v == 0 {
			return f, false, c.err
		}
		if debugFrame {
			ciePtr = uint64(v)
		} else {
			ciePtr = idAt - uint64(int64(int32(v)))
		}
	} else {
		length = c.u64("FDE length")
		f.instrEnd = c.off + length
		idAt = c.off
		v := c.u64("CIE pointer")
		if debugFrame && v == ^uint64(0) || !debugFrame && v == 0 {
			return f, false, c.err
		}
		if debugFrame {
			ciePtr = v
		} else {
			ciePtr = idAt - v
		}
	}
	if c.err != nil {
		return f, false, c.err
	}
	if f.cie, err = parseCIE(sec, ciePtr, debugFrame, mem); err != nil {
		return f, false, err
	}
	f.start = c.encoded(f.cie.fdeEnc, mem, "FDE start")
	f.end = f.start + c.encoded(f.cie.fdeEnc&0x0f, mem, "FDE range")
	var augEnd uint64
	if f.cie.sized {
		n := c.uleb("FDE augmentation length")
		augEnd = c.off + n
	}
	c.encoded(f.cie.lsdaEnc, mem, "LSDA")
	f.instr = c.off
	if f.cie.sized {
		f.instr = augEnd
	}
	if c.err != nil {
		return f, false, c.err
	}
	return f, true, nil
}

// CFA instructions (DW_CFA_*), as libunwind 1.6 knows them.
const (
	cfaAdvanceLoc      = 0x40
	cfaOffset          = 0x80
	cfaRestore         = 0xc0
	cfaNop             = 0x00
	cfaSetLoc          = 0x01
	cfaAdvanceLoc1     = 0x02
	cfaAdvanceLoc2     = 0x03
	cfaAdvanceLoc4     = 0x04
	cfaOffsetExt       = 0x05
	cfaRestoreExt      = 0x06
	cfaUndefined       = 0x07
	cfaSameValue       = 0x08
	cfaRegister        = 0x09
	cfaRememberState   = 0x0a
	cfaRestoreState    = 0x0b
	cfaDefCFA          = 0x0c
	cfaDefCFARegister  = 0x0d
	cfaDefCFAOffset    = 0x0e
	cfaDefCFAExpr      = 0x0f
	cfaExpression      = 0x10
	cfaOffsetExtSf     = 0x11
	cfaDefCFASf        = 0x12
	cfaDefCFAOffsetSf  = 0x13
	cfaValExpression   = 0x16
	cfaLoUser          = 0x1c
	cfaMIPSAdvanceLoc8 = 0x1d
	cfaGNUWindowSave   = 0x2d
	cfaGNUArgsSize     = 0x2e
	cfaGNUNegOffsetExt = 0x2f
	cfaHiUser          = 0x3c
)

// program runs CFA instructions (libunwind's run_cfi_program).
type program struct {
	sec     *section
	ci      *cie
	cur     *row
	initial *row // the CIE's row, for DW_CFA_restore
	stack   []row
	mem     func(uint64) (uint64, bool)
}

// run executes the instructions in [off, end) while the location stays
// at or below endIP, starting at location ip. Opcodes libunwind 1.6
// does not know (DW_CFA_val_offset among them) do nothing and their
// operands are read as instructions, as there.
func (p *program) run(off, end, ip, endIP uint64) error {
	c := p.sec.at(off)
	for ip <= endIP && c.off < end && c.err == nil {
		op := c.u8("CFA opcode")
		var operand uint64
		if op&0xc0 != 0 {
			operand = uint64(op & 0x3f)
			op &= 0xc0
		}
		ip = p.step(c, op, operand, ip)
	}
	return c.err
}

// step executes one instruction and returns the new location.
func (p *program) step(c *cursor, op uint8, operand, ip uint64) uint64 {
	switch op {
	case cfaAdvanceLoc:
		return ip + operand*p.ci.codeAlign
	case cfaAdvanceLoc1:
		return ip + uint64(c.u8("advance"))*p.ci.codeAlign
	case cfaAdvanceLoc2:
		return ip + uint64(c.u16("advance"))*p.ci.codeAlign
	case cfaAdvanceLoc4:
		return ip + uint64(c.u32("advance"))*p.ci.codeAlign
	case cfaSetLoc:
		if v := c.encoded(p.ci.fdeEnc, p.mem, "set_loc"); c.err == nil {
			return v
		}
	case cfaOffset:
		p.set(c, p.checkReg(c, operand), whereCFARel, c.uleb("offset")*p.ci.dataAlign)
	case cfaOffsetExt:
		r := p.reg(c)
		p.set(c, r, whereCFARel, c.uleb("offset")*p.ci.dataAlign)
	case cfaOffsetExtSf:
		r := p.reg(c)
		p.set(c, r, whereCFARel, c.sleb("offset")*p.ci.dataAlign)
	case cfaGNUNegOffsetExt:
		r := p.reg(c)
		p.set(c, r, whereCFARel, -(c.uleb("offset") * p.ci.dataAlign))
	case cfaRestore:
		p.restore(c, p.checkReg(c, operand))
	case cfaRestoreExt:
		p.restore(c, p.checkReg(c, c.uleb("register")))
	case cfaUndefined:
		p.set(c, p.reg(c), whereUndef, 0)
	case cfaSameValue:
		p.set(c, p.reg(c), whereSame, 0)
	case cfaRegister:
		r := p.reg(c)
		p.set(c, r, whereReg, c.uleb("register"))
	case cfaRememberState:
		if len(p.stack) >= maxRem {
			c.fail("remember_state too deep")
			break
		}
		p.stack = append(p.stack, *p.cur)
	case cfaRestoreState:
		if len(p.stack) == 0 {
			c.fail("restore_state without remember_state")
			break
		}
		*p.cur = p.stack[len(p.stack)-1]
		p.stack = p.stack[:len(p.stack)-1]
	default:
		p.cfaStep(c, op)
	}
	return ip
}

// cfaStep executes the instructions that define the CFA, the expression
// rules and the ones libunwind rejects or ignores.
func (p *program) cfaStep(c *cursor, op uint8) {
	switch op {
	case cfaDefCFA:
		r := p.reg(c)
		off := c.uleb("offset")
		if c.err == nil {
			p.cur.cfa, p.cur.cfaOff = rule{whereReg, r}, off
		}
	case cfaDefCFASf:
		r := p.reg(c)
		off := c.sleb("offset") * p.ci.dataAlign
		if c.err == nil {
			p.cur.cfa, p.cur.cfaOff = rule{whereReg, r}, off
		}
	case cfaDefCFARegister:
		if r := p.reg(c); c.err == nil {
			p.cur.cfa = rule{whereReg, r}
		}
	case cfaDefCFAOffset:
		if off := c.uleb("offset"); c.err == nil {
			p.cur.cfaOff = off
		}
	case cfaDefCFAOffsetSf:
		if off := c.sleb("offset") * p.ci.dataAlign; c.err == nil {
			p.cur.cfaOff = off
		}
	case cfaDefCFAExpr:
		at := c.off
		if n := c.uleb("expression length"); c.bytes(n, "expression") != nil {
			p.cur.cfa = rule{whereExpr, at}
		}
	case cfaExpression, cfaValExpression:
		r := p.reg(c)
		at := c.off
		if n := c.uleb("expression length"); c.bytes(n, "expression") != nil {
			w := whereExpr
			if op == cfaValExpression {
				w = whereValExpr
			}
			p.set(c, r, w, at)
		}
	case cfaGNUArgsSize:
		c.uleb("args size")
	case cfaMIPSAdvanceLoc8, cfaGNUWindowSave, cfaLoUser, cfaHiUser:
		c.off--
		c.fail("unexpected CFA opcode")
	}
}

// reg reads a register operand; numbers past the tracked registers are
// errors (read_regnum).
func (p *program) reg(c *cursor) uint64 {
	return p.checkReg(c, c.uleb("register"))
}

func (p *program) checkReg(c *cursor, r uint64) uint64 {
	if r >= nRegs && c.err == nil {
		c.fail("register number out of range")
	}
	return r
}

func (p *program) set(c *cursor, r uint64, w where, val uint64) {
	if c.err == nil {
		p.cur.regs[r] = rule{w, val}
	}
}

func (p *program) restore(c *cursor, r uint64) {
	if c.err == nil {
		p.cur.regs[r] = p.initial.regs[r]
	}
}

// rowAt computes the row of fde f at pc (setup_fde and parse_fde): the
// CIE's initial instructions, then the FDE's up to pc.
func rowAt(sec *section, f *fde, pc uint64, mem func(uint64) (uint64, bool), stack []row) (row, []row, error) {
	var cur, initial row
	for i := range cur.regs {
		cur.regs[i].where = whereSame
	}
	cur.cfa.where = whereSame
	cur.ra = f.cie.ra
	p := program{sec: sec, ci: &f.cie, cur: &cur, initial: &initial, stack: stack[:0], mem: mem}
	if err := p.run(f.cie.instr, f.cie.instrEnd, 0, ^uint64(0)); err != nil {
		return cur, p.stack, err
	}
	initial = cur
	p.stack = p.stack[:0]
	err := p.run(f.instr, f.instrEnd, f.start, pc)
	return cur, p.stack, err
}
