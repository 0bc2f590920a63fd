package unwind

// DWARF expression opcodes (DW_OP_*) libunwind 1.6 evaluates.
const (
	opAddr       = 0x03
	opDeref      = 0x06
	opConst1u    = 0x08
	opConst1s    = 0x09
	opConst2u    = 0x0a
	opConst2s    = 0x0b
	opConst4u    = 0x0c
	opConst4s    = 0x0d
	opConst8u    = 0x0e
	opConst8s    = 0x0f
	opConstu     = 0x10
	opConsts     = 0x11
	opDup        = 0x12
	opDrop       = 0x13
	opOver       = 0x14
	opPick       = 0x15
	opSwap       = 0x16
	opRot        = 0x17
	opAbs        = 0x19
	opAnd        = 0x1a
	opDiv        = 0x1b
	opMinus      = 0x1c
	opMod        = 0x1d
	opMul        = 0x1e
	opNeg        = 0x1f
	opNot        = 0x20
	opOr         = 0x21
	opPlus       = 0x22
	opPlusUconst = 0x23
	opShl        = 0x24
	opShr        = 0x25
	opShra       = 0x26
	opXor        = 0x27
	opBra        = 0x28
	opEq         = 0x29
	opGe         = 0x2a
	opGt         = 0x2b
	opLe         = 0x2c
	opLt         = 0x2d
	opNe         = 0x2e
	opSkip       = 0x2f
	opLit0       = 0x30
	opReg0       = 0x50
	opBreg0      = 0x70
	opRegx       = 0x90
	opBregx      = 0x92
	opDerefSize  = 0x94
	opNop        = 0x96

	maxExprStack = 64      // MAX_EXPR_STACK_SIZE
	maxExprOps   = 1 << 16 // bounds DW_OP_skip/bra loops (libunwind has no bound)
)

// exprEnv is what an expression reads: registers (through the cursor's
// locations, as unw_get_reg does) and memory (byte by byte through
// aligned words, as libunwind's remote dwarf_readu8).
type exprEnv interface {
	getReg(dw uint64) (uint64, error)
	readByte(addr uint64) (uint8, error)
}

// readN reads an n-byte little-endian value with env.readByte.
func readN(env exprEnv, addr uint64, n int) (uint64, error) {
	var v uint64
	for i := range n {
		b, err := env.readByte(addr + uint64(i))
		if err != nil {
			return 0, err
		}
		v |= uint64(b) << (8 * i)
	}
	return v, nil
}

// exprStack is the evaluation stack.
type exprStack struct {
	v   [maxExprStack]uint64
	n   int
	err bool
}

func (s *exprStack) push(x uint64) {
	if s.n >= maxExprStack {
		s.err = true
		return
	}
	s.v[s.n] = x
	s.n++
}

func (s *exprStack) pop() uint64 {
	if s.n == 0 {
		s.err = true
		return 0
	}
	s.n--
	return s.v[s.n]
}

func (s *exprStack) pick(i uint64) uint64 {
	if i >= uint64(s.n) {
		s.err = true
		return 0
	}
	return s.v[s.n-1-int(i)]
}

// evalExpr evaluates the expression whose ULEB128 length is at off in sec
// (libunwind's eval_location_expr and dwarf_eval_expr), with initial on
// the stack. isReg reports a DW_OP_reg result: val is then a register.
func evalExpr(sec *section, off uint64, initial uint64, env exprEnv) (val uint64, isReg bool, err error) {
	c := sec.at(off)
	n := c.uleb("expression length")
	if c.err != nil {
		return 0, false, c.err
	}
	end := c.off + n
	var st exprStack
	st.push(initial)
	for ops := 0; c.off < end; ops++ {
		if ops >= maxExprOps {
			c.fail("expression runs too long")
			return 0, false, c.err
		}
		at := c.off
		op := c.u8("expression opcode")
		if c.err != nil {
			return 0, false, c.err
		}
		switch {
		case op >= opReg0 && op < opReg0+32:
			return regnum(uint64(op - opReg0)), true, nil
		case op == opRegx:
			r := c.uleb("register")
			return regnum(r), true, c.err
		}
		if err := exprOp(c, op, &st, env); err != nil {
			return 0, false, err
		}
		if c.err != nil {
			return 0, false, c.err
		}
		if st.err {
			return 0, false, &CFIError{Section: sec.name, Offset: at, What: "expression stack under- or overflow"}
		}
	}
	v := st.pop()
	if st.err {
		return 0, false, &CFIError{Section: sec.name, Offset: end, What: "expression leaves no value"}
	}
	return v, false, nil
}

// regnum is dwarf_to_unw_regnum: numbers past the map read as 0 (RAX).
func regnum(r uint64) uint64 {
	if r >= nRegs {
		return 0
	}
	return r
}

// exprOp executes one operation; c.err or st.err report bad input, the
// error returned a failed register or memory read.
func exprOp(c *cursor, op uint8, st *exprStack, env exprEnv) error {
	switch {
	case op >= opLit0 && op < opLit0+32:
		st.push(uint64(op - opLit0))
		return nil
	case op >= opBreg0 && op < opBreg0+32:
		off := c.sleb("breg offset")
		v, err := env.getReg(regnum(uint64(op - opBreg0)))
		if err != nil {
			return err
		}
		st.push(v + off)
		return nil
	}
	switch op {
	case opBregx:
		r := c.uleb("register")
		off := c.sleb("bregx offset")
		v, err := env.getReg(regnum(r))
		if err != nil {
			return err
		}
		st.push(v + off)
	case opDeref:
		v, err := readN(env, st.pop(), 8)
		if err != nil {
			return err
		}
		st.push(v)
	case opDerefSize:
		return derefSize(c, st, env)
	case opSkip:
		d := int16(c.u16("skip"))
		c.off += uint64(int64(d))
	case opBra:
		d := int16(c.u16("bra"))
		if st.pop() != 0 {
			c.off += uint64(int64(d))
		}
	case opNop:
	default:
		if !constOp(c, op, st) && !stackOp(op, st) && !arithOp(c, op, st) {
			c.off--
			c.fail("unexpected expression opcode")
		}
	}
	return nil
}

func derefSize(c *cursor, st *exprStack, env exprEnv) error {
	size := c.u8("deref size")
	addr := st.pop()
	if c.err != nil || st.err {
		return nil
	}
	var n int
	switch size {
	case 1, 2:
		n = int(size)
	case 3, 4:
		n = 4
	case 5, 6, 7, 8:
		n = 8
	default:
		c.off--
		c.fail("bad deref size")
		return nil
	}
	v, err := readN(env, addr, n)
	if err != nil {
		return err
	}
	switch {
	case size == 3:
		v &= 0xffffff
	case size > 4 && size < 8:
		v &= ^uint64(0) << (8 * size) // libunwind's mask, kept as it is
	}
	st.push(v)
	return nil
}

// constOp pushes the constants.
func constOp(c *cursor, op uint8, st *exprStack) bool {
	switch op {
	case opAddr, opConst8u, opConst8s:
		st.push(c.u64("constant"))
	case opConst1u:
		st.push(uint64(c.u8("constant")))
	case opConst1s:
		st.push(uint64(int64(int8(c.u8("constant")))))
	case opConst2u:
		st.push(uint64(c.u16("constant")))
	case opConst2s:
		st.push(uint64(int64(int16(c.u16("constant")))))
	case opConst4u:
		st.push(uint64(c.u32("constant")))
	case opConst4s:
		st.push(uint64(int64(int32(c.u32("constant")))))
	case opConstu:
		st.push(c.uleb("constant"))
	case opConsts:
		st.push(c.sleb("constant"))
	case opPick:
		st.push(st.pick(uint64(c.u8("pick"))))
	case opPlusUconst:
		st.push(st.pop() + c.uleb("constant"))
	default:
		return false
	}
	return true
}

// stackOp executes the stack manipulations.
func stackOp(op uint8, st *exprStack) bool {
	switch op {
	case opDup:
		st.push(st.pick(0))
	case opDrop:
		st.pop()
	case opOver:
		st.push(st.pick(1))
	case opSwap:
		a, b := st.pop(), st.pop()
		st.push(a)
		st.push(b)
	case opRot:
		a, b, c := st.pop(), st.pop(), st.pop()
		st.push(a)
		st.push(c)
		st.push(b)
	default:
		return false
	}
	return true
}

// arithOp executes the arithmetic and comparisons, as libunwind does
// (division and multiplication by zero leave 0).
func arithOp(_ *cursor, op uint8, st *exprStack) bool {
	switch op {
	case opAbs:
		v := st.pop()
		if int64(v) < 0 {
			v = -v
		}
		st.push(v)
		return true
	case opNeg:
		st.push(-st.pop())
		return true
	case opNot:
		st.push(^st.pop())
		return true
	}
	switch op {
	case opAnd, opDiv, opMinus, opMod, opMul, opOr, opPlus, opShl, opShr, opShra, opXor,
		opEq, opGe, opGt, opLe, opLt, opNe:
	default:
		return false
	}
	t1, t2 := st.pop(), st.pop()
	st.push(binaryOp(op, t1, t2))
	return true
}

// binaryOp applies a two-operand operation to t2 (deeper) and t1 (top).
func binaryOp(op uint8, t1, t2 uint64) uint64 {
	s1, s2 := int64(t1), int64(t2)
	switch op {
	case opAnd:
		return t1 & t2
	case opDiv:
		if t1 != 0 && !(s2 == -1<<63 && s1 == -1) {
			return uint64(s2 / s1)
		}
		return t1
	case opMinus:
		return t2 - t1
	case opMod:
		if t1 != 0 {
			return t2 % t1
		}
		return t1
	case opMul:
		return t2 * t1
	case opOr:
		return t1 | t2
	case opPlus:
		return t1 + t2
	case opShl:
		return shift(t2, t1, func(a uint64, n uint) uint64 { return a << n })
	case opShr:
		return shift(t2, t1, func(a uint64, n uint) uint64 { return a >> n })
	case opShra:
		return shift(t2, t1, func(a uint64, n uint) uint64 { return uint64(int64(a) >> n) })
	case opXor:
		return t1 ^ t2
	}
	return compare(op, s1, s2)
}

// shift applies f with the count taken mod 64, as x86's shift does (C
// leaves larger counts undefined).
func shift(a, n uint64, f func(uint64, uint) uint64) uint64 { return f(a, uint(n&63)) }

func compare(op uint8, s1, s2 int64) uint64 {
	var r bool
	switch op {
	case opEq:
		r = s2 == s1
	case opGe:
		r = s2 >= s1
	case opGt:
		r = s2 > s1
	case opLe:
		r = s2 <= s1
	case opLt:
		r = s2 < s1
	case opNe:
		r = s2 != s1
	}
	if r {
		return 1
	}
	return 0
}
