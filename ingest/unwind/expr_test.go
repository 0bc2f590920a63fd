package unwind

import (
	"errors"
	"testing"
)

// fakeEnv gives registers and memory to expressions.
type fakeEnv struct {
	regs map[uint64]uint64
	mem  map[uint64]uint8
}

func (e fakeEnv) getReg(r uint64) (uint64, error) {
	v, ok := e.regs[r]
	if !ok {
		return 0, ErrBadReg
	}
	return v, nil
}

func (e fakeEnv) readByte(addr uint64) (uint8, error) {
	b, ok := e.mem[addr]
	if !ok {
		return 0, ErrMemory
	}
	return b, nil
}

// pltExpr is the CFA expression of a PLT entry (GNU ld): RSP + 8, plus
// 8 more once the entry has pushed its index (RIP & 15 >= 11).
var pltExpr = []byte{0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22}

func TestEvalExpr(t *testing.T) {
	mem := map[uint64]uint8{0x5000: 0x34, 0x5001: 0x12, 0x5002: 0, 0x5003: 0, 0x5004: 0, 0x5005: 0, 0x5006: 0, 0x5007: 0}
	for _, tc := range []struct {
		name    string
		expr    []byte
		initial uint64
		regs    map[uint64]uint64
		want    uint64
		isReg   bool
		err     bool
	}{
		{name: "PLT before the push", expr: pltExpr, regs: map[uint64]uint64{dwRSP: 0x7000, dwRIP: 0x1026}, want: 0x7008},
		{name: "PLT after the push", expr: pltExpr, regs: map[uint64]uint64{dwRSP: 0x7000, dwRIP: 0x102b}, want: 0x7010},
		{name: "initial value on the stack", expr: []byte{0x23, 16}, initial: 0x100, want: 0x110},
		{name: "deref", expr: []byte{0x0c, 0x00, 0x50, 0, 0, 0x06}, want: 0x1234},
		{name: "deref_size 1", expr: []byte{0x0c, 0x00, 0x50, 0, 0, 0x94, 1}, want: 0x34},
		{name: "register result", expr: []byte{0x56}, want: 6, isReg: true},
		{name: "regx past the map reads as RAX", expr: []byte{0x90, 40}, want: 0, isReg: true},
		{name: "arithmetic", expr: []byte{0x35, 0x33, 0x1c, 0x37, 0x1e, 0x32, 0x1b}, want: 7},
		{name: "division by zero leaves zero", expr: []byte{0x35, 0x30, 0x1b}, want: 0},
		{name: "signed comparison", expr: []byte{0x11, 0x7f, 0x30, 0x2d}, want: 1},
		{name: "swap rot over pick", expr: []byte{0x31, 0x32, 0x33, 0x17, 0x16, 0x14, 0x15, 1, 0x22, 0x22, 0x22}, want: 6},
		{name: "skip", expr: []byte{0x2f, 1, 0, 0x31, 0x32}, want: 2},
		{name: "bra taken", expr: []byte{0x31, 0x28, 1, 0, 0x33, 0x34}, want: 4},
		{name: "loop is bounded", expr: []byte{0x2f, 0xfd, 0xff}, err: true},
		{name: "underflow", expr: []byte{0x22, 0x22}, err: true},
		{name: "unknown opcode", expr: []byte{0x91, 0}, err: true},
		{name: "unreadable deref", expr: []byte{0x30, 0x06}, err: true},
		{name: "missing register", expr: []byte{0x73, 0}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sec := &section{name: "expr", data: cat(uleb(uint64(len(tc.expr))), tc.expr)}
			v, isReg, err := evalExpr(sec, 0, tc.initial, fakeEnv{regs: tc.regs, mem: mem})
			if tc.err {
				if err == nil {
					t.Fatalf("= %#x, want an error", v)
				}
				var ce *CFIError
				if !errors.As(err, &ce) && !errors.Is(err, ErrMemory) && !errors.Is(err, ErrBadReg) {
					t.Fatalf("error %v of an unexpected kind", err)
				}
				return
			}
			if err != nil || v != tc.want || isReg != tc.isReg {
				t.Fatalf("= %#x, %v, %v; want %#x, %v", v, isReg, err, tc.want, tc.isReg)
			}
		})
	}
}
