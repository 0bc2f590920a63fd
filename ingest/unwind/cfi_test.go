package unwind

import (
	"errors"
	"testing"
)

// TestRows runs CFA programs of hand-made CFI and checks the row at
// addresses inside the function.
func TestRows(t *testing.T) {
	const fn = 0x1000
	push := cat([]byte{cfaAdvanceLoc | 1, cfaDefCFAOffset}, uleb(16), []byte{cfaOffset | dwRBP}, uleb(2))
	for _, tc := range []struct {
		name    string
		instr   []byte
		pc      uint64
		cfaReg  uint64
		cfaOff  uint64
		reg     int
		want    rule
		wantErr bool
	}{
		{name: "CIE rules at entry", instr: push, pc: fn, cfaReg: dwRSP, cfaOff: 8, reg: dwRIP, want: rule{whereCFARel, -8 & (1<<64 - 1)}},
		{name: "before the advance, RBP unsaved", instr: push, pc: fn, cfaReg: dwRSP, cfaOff: 8, reg: dwRBP, want: rule{whereSame, 0}},
		{name: "after push", instr: push, pc: fn + 1, cfaReg: dwRSP, cfaOff: 16, reg: dwRBP, want: rule{whereCFARel, uint64(-16 + 1<<64)}},
		{name: "advance_loc1", instr: cat([]byte{cfaAdvanceLoc1, 0x20, cfaDefCFAOffset}, uleb(32)), pc: fn + 0x20, cfaReg: dwRSP, cfaOff: 32, reg: dwRBP, want: rule{whereSame, 0}},
		{name: "advance_loc2 not reached", instr: cat([]byte{cfaAdvanceLoc2, 0x00, 0x01, cfaDefCFAOffset}, uleb(32)), pc: fn + 0xff, cfaReg: dwRSP, cfaOff: 8, reg: dwRBP, want: rule{whereSame, 0}},
		{name: "advance_loc4", instr: cat([]byte{cfaAdvanceLoc4, 0x10, 0, 0, 0, cfaDefCFAOffset}, uleb(24)), pc: fn + 0x10, cfaReg: dwRSP, cfaOff: 24, reg: dwRBP, want: rule{whereSame, 0}},
		{name: "def_cfa_register", instr: cat(push, []byte{cfaAdvanceLoc | 1, cfaDefCFARegister}, uleb(dwRBP)), pc: fn + 2, cfaReg: dwRBP, cfaOff: 16, reg: dwRBP, want: rule{whereCFARel, uint64(-16 + 1<<64)}},
		{name: "def_cfa_sf", instr: cat([]byte{cfaDefCFASf}, uleb(dwRBP), sleb(-2)), pc: fn, cfaReg: dwRBP, cfaOff: 16, reg: dwRIP, want: rule{whereCFARel, uint64(-8 + 1<<64)}},
		{name: "def_cfa_offset_sf", instr: cat([]byte{cfaDefCFAOffsetSf}, sleb(-4)), pc: fn, cfaReg: dwRSP, cfaOff: 32, reg: dwRBP, want: rule{whereSame, 0}},
		{name: "restore", instr: cat(push, []byte{cfaAdvanceLoc | 1, cfaRestore | dwRBP}), pc: fn + 2, cfaReg: dwRSP, cfaOff: 16, reg: dwRBP, want: rule{whereSame, 0}},
		{name: "restore_extended", instr: cat(push, []byte{cfaAdvanceLoc | 1, cfaRestoreExt}, uleb(dwRBP)), pc: fn + 2, cfaReg: dwRSP, cfaOff: 16, reg: dwRBP, want: rule{whereSame, 0}},
		{name: "remember and restore state", instr: cat(push, []byte{cfaRememberState, cfaAdvanceLoc | 1, cfaDefCFAOffset}, uleb(8), []byte{cfaAdvanceLoc | 1, cfaRestoreState}), pc: fn + 3, cfaReg: dwRSP, cfaOff: 16, reg: dwRBP, want: rule{whereCFARel, uint64(-16 + 1<<64)}},
		{name: "remembered state not yet restored", instr: cat(push, []byte{cfaRememberState, cfaAdvanceLoc | 1, cfaDefCFAOffset}, uleb(8), []byte{cfaAdvanceLoc | 1, cfaRestoreState}), pc: fn + 2, cfaReg: dwRSP, cfaOff: 8, reg: dwRBP, want: rule{whereCFARel, uint64(-16 + 1<<64)}},
		{name: "register", instr: cat([]byte{cfaRegister}, uleb(dwRBP), uleb(3)), pc: fn, cfaReg: dwRSP, cfaOff: 8, reg: dwRBP, want: rule{whereReg, 3}},
		{name: "undefined", instr: cat([]byte{cfaUndefined}, uleb(dwRIP)), pc: fn, cfaReg: dwRSP, cfaOff: 8, reg: dwRIP, want: rule{whereUndef, 0}},
		{name: "same_value", instr: cat([]byte{cfaOffset | 3}, uleb(3), []byte{cfaSameValue}, uleb(3)), pc: fn, cfaReg: dwRSP, cfaOff: 8, reg: 3, want: rule{whereSame, 0}},
		{name: "offset_extended_sf", instr: cat([]byte{cfaOffsetExtSf}, uleb(3), sleb(3)), pc: fn, cfaReg: dwRSP, cfaOff: 8, reg: 3, want: rule{whereCFARel, uint64(-24 + 1<<64)}},
		{name: "GNU_args_size is skipped", instr: cat([]byte{cfaGNUArgsSize}, uleb(16), []byte{cfaDefCFAOffset}, uleb(24)), pc: fn, cfaReg: dwRSP, cfaOff: 24, reg: dwRBP, want: rule{whereSame, 0}},
		// libunwind 1.6 does not know DW_CFA_val_offset (0x14): it does
		// nothing, and its operands run as instructions (here 0x03 0x01,
		// advance_loc2 by 0x0e01, which ends the program at this pc).
		{name: "val_offset is ignored as libunwind ignores it", instr: []byte{0x14, 0x03, 0x01, cfaDefCFAOffset, 32}, pc: fn, cfaReg: dwRSP, cfaOff: 8, reg: 3, want: rule{whereSame, 0}},
		{name: "restore_state without remember", instr: []byte{cfaRestoreState}, pc: fn, wantErr: true},
		{name: "register out of range", instr: cat([]byte{cfaUndefined}, uleb(17)), pc: fn, wantErr: true},
		{name: "GNU_window_save", instr: []byte{cfaGNUWindowSave}, pc: fn, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sec, _, _ := ehImage("zR", stdCIE, []testFDE{{fn, 0x100, tc.instr}})
			f := testFile("zR", stdCIE, []testFDE{{fn, 0x100, tc.instr}}, nil)
			fd, err := f.lookupEH(tc.pc)
			if err != nil {
				t.Fatalf("lookupEH(%#x): %v", tc.pc, err)
			}
			r, _, err := rowAt(sec, fd, tc.pc, nil, nil)
			if tc.wantErr {
				var ce *CFIError
				if !errors.As(err, &ce) {
					t.Fatalf("err %v, want a *CFIError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.cfa != (rule{whereReg, tc.cfaReg}) || r.cfaOff != tc.cfaOff {
				t.Errorf("CFA %+v%+d, want r%d%+d", r.cfa, int64(r.cfaOff), tc.cfaReg, tc.cfaOff)
			}
			if r.regs[tc.reg] != tc.want {
				t.Errorf("r%d rule %+v, want %+v", tc.reg, r.regs[tc.reg], tc.want)
			}
		})
	}
}

// TestLookupEH finds FDEs through the .eh_frame_hdr table: below the
// first, in a gap and past the last there is no information.
func TestLookupEH(t *testing.T) {
	f := testFile("zR", stdCIE, []testFDE{{0x1000, 0x10, nil}, {0x1020, 0x10, nil}}, nil)
	for _, tc := range []struct {
		pc    uint64
		start uint64
		err   error
	}{
		{0xfff, 0, ErrNoInfo},
		{0x1000, 0x1000, nil},
		{0x100f, 0x1000, nil},
		{0x1010, 0, ErrNoInfo},
		{0x1025, 0x1020, nil},
		{0x1030, 0, ErrNoInfo},
	} {
		fd, err := f.lookupEH(tc.pc)
		if !errors.Is(err, tc.err) || err == nil && fd.start != tc.start {
			t.Errorf("lookupEH(%#x) = %v, %v; want start %#x, %v", tc.pc, fd, err, tc.start, tc.err)
		}
	}
	if _, err := (&File{hdrErr: errNoHdr}).lookupEH(0x1000); !errors.Is(err, errNoHdr) {
		t.Errorf("no header: %v", err)
	}
}

// TestParseCIEErrors reports bad CIEs with the offset of the bad byte.
func TestParseCIEErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		off  uint64
	}{
		{"truncated", []byte{8, 0, 0}, 0},
		{"truncated operand", cat(u32(9), u32(0), []byte{3, 0, 1, 0x78, 0x90}), 13},
		{"not a CIE", cat(u32(8), u32(5), []byte{1, 0, 1, 0x78}), 8},
		{"bad version", cat(u32(8), u32(0), []byte{2, 0, 1, 0x78}), 8},
		{"unknown unsized augmentation", cat(u32(12), u32(0), []byte{1, 'x', 0, 1, 0x78, 16, 0, 0}), 9},
		{"indirect personality unreadable", cat(u32(16), u32(0), []byte{1, 'z', 'P', 0, 1, 0x78, 16, 5, 0x9b, 0, 0, 0, 0, 0}), 17},
	} {
		_, err := parseCIE(&section{name: ".eh_frame", data: tc.data}, 0, false, nil)
		var ce *CFIError
		if !errors.As(err, &ce) {
			t.Errorf("%s: err %v, want *CFIError", tc.name, err)
			continue
		}
		if ce.Offset != tc.off {
			t.Errorf("%s: offset %#x, want %#x (%v)", tc.name, ce.Offset, tc.off, err)
		}
	}
}

// TestDebugFrameLookup follows libunwind's arithmetic over .debug_frame:
// found for an ET_EXEC file whose first segment is at 0, not for a
// shared object mapped elsewhere (perf passes the map's start as the
// segment base and libunwind subtracts it twice).
func TestDebugFrameLookup(t *testing.T) {
	cie := cat(u32(0xffffffff), []byte{1, 0}, uleb(1), sleb(-8), []byte{16}, stdCIE)
	cie = cat(u32(uint32(len(pad4(cie)))), pad4(cie))
	fdeBody := pad4(cat(u32(0), binLE64(0x1000), binLE64(0x100)))
	data := cat(cie, u32(uint32(len(fdeBody))), fdeBody)
	d := &debugFrame{sec: &section{name: ".debug_frame", data: data}}
	d.index()
	if len(d.starts) != 1 {
		t.Fatalf("index %v", d.starts)
	}
	if fd, err := d.lookup(0x1010, 0); err != nil || fd.start != 0x1000 {
		t.Errorf("exec: %v %v", fd, err)
	}
	if _, err := d.lookup(0x7f0000001010, 0x7f0000000000); !errors.Is(err, ErrNoInfo) {
		t.Errorf("shared: %v", err)
	}
}

func binLE64(v uint64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b
}
