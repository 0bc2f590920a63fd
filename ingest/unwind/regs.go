package unwind

// Perf's x86_64 register numbers (arch/x86/include/uapi/asm/perf_regs.h):
// a sample's user registers are the ones set in the attr's
// sample_regs_user mask, in bit order.
const (
	RegAX = iota
	RegBX
	RegCX
	RegDX
	RegSI
	RegDI
	RegBP
	RegSP
	RegIP
	RegFlags
	RegCS
	RegSS
	RegDS
	RegES
	RegFS
	RegGS
	RegR8
	RegR9
	RegR10
	RegR11
	RegR12
	RegR13
	RegR14
	RegR15
	NumRegs
)

// dwToPerf maps the DWARF register numbers libunwind tracks to perf's
// (LIBUNWIND__ARCH_REG_ID).
var dwToPerf = [nRegs]int{RegAX, RegDX, RegCX, RegBX, RegSI, RegDI, RegBP, RegSP,
	RegR8, RegR9, RegR10, RegR11, RegR12, RegR13, RegR14, RegR15, RegIP}

// Regs are a sample's user registers.
type Regs struct {
	mask uint64
	val  [NumRegs]uint64
}

// NewRegs returns the registers of a sample: vals holds one value per bit
// set in mask (the attr's sample_regs_user), in bit order; bits past the
// x86_64 registers and missing values are ignored.
func NewRegs(mask uint64, vals []uint64) Regs {
	var r Regs
	i := 0
	for bit := range NumRegs {
		if mask&(1<<bit) == 0 {
			continue
		}
		if i >= len(vals) {
			break
		}
		r.mask |= 1 << bit
		r.val[bit] = vals[i]
		i++
	}
	return r
}

// Get returns perf register reg, and whether the sample has it (perf's
// perf_reg_value).
func (r *Regs) Get(reg int) (uint64, bool) {
	if reg < 0 || reg >= NumRegs || r.mask&(1<<reg) == 0 {
		return 0, false
	}
	return r.val[reg], true
}
