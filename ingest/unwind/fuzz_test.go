package unwind

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func bytesReader(b []byte) io.ReaderAt { return bytes.NewReader(b) }

// FuzzCFI feeds arbitrary bytes to the CFI readers as .eh_frame and
// .debug_frame: CIEs, FDEs, CFA programs and expressions must fail with
// errors, never panic, and take bounded work.
func FuzzCFI(f *testing.F) {
	sec, _, _ := ehImage("zR", stdCIE, threeFns)
	f.Add(sec.data[12+8*3:])
	f.Add(cieBytes("zRS", cat([]byte{cfaDefCFAExpr}, uleb(uint64(len(pltExpr))), pltExpr)))
	f.Add(cat(u32(12), u32(0), []byte{1, 'z', 'P', 'L', 'R', 0, 1, 0x78, 16, 4, 0x9b, 0, 0}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		eh := &section{name: ".eh_frame", addr: 0x2000, data: data}
		var rem []row
		for off, n := uint64(0), 0; off < uint64(len(data)) && n < 64; n++ {
			fd, ok, err := parseFDE(eh, off, false, func(uint64) (uint64, bool) { return 0, true })
			if err == nil && ok {
				for _, pc := range []uint64{fd.start, fd.start + (fd.end-fd.start)/2, fd.end - 1} {
					var r row
					r, rem, err = rowAt(eh, &fd, pc, nil, rem)
					if err == nil {
						evalRow(t, eh, &r)
					}
				}
			}
			c := eh.at(off)
			l := uint64(c.u32("length"))
			if c.err != nil || l == 0 || l == 0xffffffff {
				break
			}
			off = c.off + l
		}
		// The bytes as a whole binary's table and CFI, and as its stack.
		file := &File{r: bytesReader(data), size: int64(len(data)), hdrAddr: 0x2000, table: 0x2000,
			count: uint64(len(data) / 8), eh: eh, fdes: make(map[uint64]fdeResult)}
		for _, ip := range []uint64{mapStart + 0x2000, mapStart + 0x2010, mapStart + 0x1000} {
			u := Unwinder{MaxStack: 16}
			u.Unwind(&Sample{Regs: regsOf(ip, sp0, sp0+16), Stack: data}, finder(file), nil)
		}
		d := &debugFrame{sec: &section{name: ".debug_frame", data: data}}
		d.index()
		for _, s := range d.starts {
			d.lookup(uint64(int64(s))+1, 0)
		}
	})
}

// evalRow evaluates a row's expressions as an unwind would.
func evalRow(t *testing.T, sec *section, r *row) {
	env := fakeEnv{regs: map[uint64]uint64{dwRSP: 0x7000, dwRIP: 0x1000, dwRBP: 0x7100}}
	check := func(off uint64) {
		_, _, err := evalExpr(sec, off, 0x7008, env)
		var ce *CFIError
		if err != nil && !errors.As(err, &ce) && !errors.Is(err, ErrMemory) && !errors.Is(err, ErrBadReg) {
			t.Fatalf("unexpected error %v", err)
		}
	}
	if r.cfa.where == whereExpr {
		check(r.cfa.val)
	}
	for _, rl := range r.regs {
		if rl.where == whereExpr || rl.where == whereValExpr {
			check(rl.val)
		}
	}
}
