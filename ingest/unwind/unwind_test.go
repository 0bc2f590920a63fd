package unwind

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

// A process for the tests: code of hand-made CFI mapped at mapStart
// (vaddr 0 at mapStart), a stack at stackTop.
const (
	mapStart = 0x400000
	sp0      = 0x7ff000
)

// three functions: A (pushes RBP: CFA = RSP+16 from A+1), B (CFA =
// RSP+8), C (the outermost: return address undefined); D, a signal
// trampoline's caller marked by an 'S' CIE, is in its own file.
var threeFns = []testFDE{
	{0x1000, 0x100, cat([]byte{cfaAdvanceLoc | 1, cfaDefCFAOffset}, uleb(16), []byte{cfaOffset | dwRBP}, uleb(2))},
	{0x1100, 0x100, nil},
	{0x1200, 0x100, cat([]byte{cfaUndefined}, uleb(dwRIP))},
}

func stackOf(words ...uint64) []byte {
	b := make([]byte, 8*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	return b
}

func regsOf(ip, sp, bp uint64) Regs {
	const mask = 1<<RegIP | 1<<RegSP | 1<<RegBP
	return NewRegs(mask, []uint64{bp, sp, ip}) // bit order: BP, SP, IP
}

func finder(f *File) Finder {
	return func(addr uint64) (Mapping, bool) {
		switch {
		case addr >= mapStart && addr < mapStart+0x10000:
			return Mapping{Start: mapStart, End: mapStart + 0x10000, Base: mapStart, File: f}, true
		case addr >= sp0-0x10000 && addr < sp0+0x10000:
			return Mapping{Start: sp0 - 0x10000, End: sp0 + 0x10000}, true // [stack]: no file
		}
		return Mapping{}, false
	}
}

func TestUnwind(t *testing.T) {
	f := testFile("zR", stdCIE, threeFns, make([]byte, 0x2000))
	pad := uint64(0) // the last 8 bytes of the copy are never read from it
	for _, tc := range []struct {
		name  string
		regs  Regs
		stack []byte
		max   int
		want  []uint64
		stop  error
	}{
		{name: "three frames", regs: regsOf(mapStart+0x1010, sp0, 1), stack: stackOf(0x1111, mapStart+0x1150, mapStart+0x1250, pad),
			want: []uint64{mapStart + 0x1010, mapStart + 0x114f, mapStart + 0x124f}},
		{name: "at A's entry", regs: regsOf(mapStart+0x1000, sp0, 1), stack: stackOf(mapStart+0x1150, mapStart+0x1250, pad),
			want: []uint64{mapStart + 0x1000, mapStart + 0x114f, mapStart + 0x124f}},
		{name: "depth limit", regs: regsOf(mapStart+0x1010, sp0, 1), stack: stackOf(0x1111, mapStart+0x1150, mapStart+0x1250, pad), max: 2,
			want: []uint64{mapStart + 0x1010, mapStart + 0x114f}},
		// The return address lies in the stack map past the copy: the
		// read gives 0 (perf's access_dso_mem fails softly), so the
		// frame is 0 - 1, and the next lookup finds no map.
		{name: "end of the copied stack", regs: regsOf(mapStart+0x1010, sp0, 1), stack: stackOf(0x1111, pad),
			want: []uint64{mapStart + 0x1010, ^uint64(0)}, stop: ErrNoMap},
		{name: "no map at the pc", regs: regsOf(0x100, sp0, 1), stack: stackOf(0, 0),
			want: []uint64{0x100}, stop: ErrNoMap},
		{name: "no SP: nothing", regs: NewRegs(1<<RegIP, []uint64{mapStart + 0x1010}), stack: stackOf(0, 0), stop: ErrBadReg},
		{name: "a zero return address is 0 - 1", regs: regsOf(mapStart+0x1110, sp0, 1), stack: stackOf(0, pad),
			want: []uint64{mapStart + 0x1110, ^uint64(0)}, stop: ErrNoMap},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := Unwinder{MaxStack: tc.max}
			got := u.Unwind(&Sample{Regs: tc.regs, Stack: tc.stack}, finder(f), nil)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#x, want %#x", got, tc.want)
			}
			if !errors.Is(u.Stop(), tc.stop) {
				t.Errorf("stopped by %v, want %v", u.Stop(), tc.stop)
			}
		})
	}
}

// TestUnwindSignalFrame: the caller of a signal frame (an 'S' CIE) is
// reported at its address, not one before, and its row is looked up
// there.
func TestUnwindSignalFrame(t *testing.T) {
	f := testFile("zRS", stdCIE, []testFDE{{0x1000, 0x100, nil}}, make([]byte, 0x2000))
	u := Unwinder{}
	got := u.Unwind(&Sample{Regs: regsOf(mapStart+0x1010, sp0, 1), Stack: stackOf(mapStart+0x1000, 0)}, finder(f), nil)
	// The second frame is at A's first byte exactly; its own step finds
	// CFA = SP + 8 again with a return address of 0 read past the copy.
	want := []uint64{mapStart + 0x1010, mapStart + 0x1000}
	if !reflect.DeepEqual(got[:2], want) {
		t.Errorf("got %#x, want %#x...", got, want)
	}
}

// TestUnwindPLT: a pc without CFI in a PLT entry's code (jmp *x(%rip);
// push; jmp) unwinds with CFA = SP + 8.
func TestUnwindPLT(t *testing.T) {
	image := make([]byte, 0x2000)
	copy(image[0x1800:], []byte{0xff, 0x25, 0, 0, 0, 0, 0x68, 0, 0, 0, 0, 0xe9, 0, 0, 0, 0})
	f := testFile("zR", stdCIE, threeFns, image)
	u := Unwinder{}
	got := u.Unwind(&Sample{Regs: regsOf(mapStart+0x1800, sp0, 1), Stack: stackOf(mapStart+0x1250, 0)}, finder(f), nil)
	want := []uint64{mapStart + 0x1800, mapStart + 0x124f}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#x, want %#x", got, want)
	}
}

// TestUnwindFramePointerGuess: a pc without CFI outside a PLT entry
// takes RBP as a frame pointer when it lies a little above the CFA.
func TestUnwindFramePointerGuess(t *testing.T) {
	f := testFile("zR", stdCIE, threeFns, make([]byte, 0x2000))
	u := Unwinder{}
	// RBP = sp0+16: saved RBP there (0), return address above it.
	got := u.Unwind(&Sample{Regs: regsOf(mapStart+0x1900, sp0, sp0+16), Stack: stackOf(0, 0, 0, mapStart+0x1250, 0)}, finder(f), nil)
	want := []uint64{mapStart + 0x1900, mapStart + 0x124f}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#x, want %#x", got, want)
	}
}

func TestNewRegs(t *testing.T) {
	r := NewRegs(1<<RegAX|1<<RegSP|1<<RegR15|1<<40, []uint64{1, 2, 3, 4})
	for _, tc := range []struct {
		reg int
		v   uint64
		ok  bool
	}{{RegAX, 1, true}, {RegSP, 2, true}, {RegR15, 3, true}, {RegIP, 0, false}, {-1, 0, false}, {NumRegs, 0, false}} {
		if v, ok := r.Get(tc.reg); v != tc.v || ok != tc.ok {
			t.Errorf("Get(%d) = %d, %v; want %d, %v", tc.reg, v, ok, tc.v, tc.ok)
		}
	}
}

// TestConcurrentUnwind unwinds through one File, and asks one Inlines,
// from several goroutines (run with -race).
func TestConcurrentUnwind(t *testing.T) {
	f := testFile("zR", stdCIE, threeFns, make([]byte, 0x2000))
	want := []uint64{mapStart + 0x1010, mapStart + 0x114f, mapStart + 0x124f}
	done := make(chan []uint64)
	for range 4 {
		go func() {
			var u Unwinder
			var got []uint64
			for range 100 {
				got = u.Unwind(&Sample{Regs: regsOf(mapStart+0x1010, sp0, 1), Stack: stackOf(0x1111, mapStart+0x1150, mapStart+0x1250, 0)}, finder(f), got[:0])
			}
			done <- got
		}()
	}
	for range 4 {
		if got := <-done; !reflect.DeepEqual(got, want) {
			t.Errorf("got %#x, want %#x", got, want)
		}
	}
}

// The Unwinder's page cache reads the words File.word reads, across
// page boundaries, at the end of the file and past it, with two files
// competing for its slots.
func TestWordThroughPageCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var files [2]*File
	for i := range files {
		image := make([]byte, 3*(1<<pageBits)+123+i*4000) // odd sizes: a short last page
		for j := range image {
			image[j] = byte(rng.Uint32())
		}
		files[i] = testFile("zR", stdCIE, threeFns, image)
	}
	var u Unwinder
	for range 20000 {
		f := files[rng.IntN(2)]
		off := rng.Uint64N(uint64(f.size) + 16)
		if rng.IntN(4) == 0 { // near a page boundary
			off = (off &^ (1<<pageBits - 1)) + 1<<pageBits - uint64(rng.IntN(12))
		}
		gv, gok := u.word(f, off)
		wv, wok := f.word(off)
		if gv != wv || gok != wok {
			t.Fatalf("word at %#x of a %d-byte file: %#x %v, want %#x %v", off, f.size, gv, gok, wv, wok)
		}
	}
}

// TestApplyInPlace checks apply's in-place path against its copying one
// on random rows without expressions: the same frame, result and error.
func TestApplyInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	stack := make([]byte, 256)
	for i := range stack {
		stack[i] = byte(rng.Uint32())
	}
	vals := make([]uint64, NumRegs)
	for i := range vals {
		vals[i] = sp0 + uint64(rng.IntN(512)) - 128
	}
	u := &Unwinder{s: &Sample{Regs: NewRegs(1<<NumRegs-1, vals), Stack: stack}}
	u.find = func(uint64) (Mapping, bool) { return Mapping{}, false }
	wheres := []where{whereUndef, whereSame, whereCFARel, whereReg}
	for n := range 5000 {
		var r rowInfo
		r.sec = &section{name: ".eh_frame"}
		for i := range r.row.regs {
			w := wheres[rng.IntN(len(wheres))]
			v := uint64(rng.IntN(nRegs))
			if w == whereCFARel {
				v = uint64(rng.IntN(64)) - 32
			}
			r.row.regs[i] = rule{w, v}
		}
		r.row.cfa = rule{whereReg, uint64(rng.IntN(nRegs))}
		r.row.cfaOff = uint64(rng.IntN(64))
		r.row.ra = uint64(rng.IntN(nRegs + 1)) // nRegs: a bad column
		r.setLive()
		if !r.inPlace {
			t.Fatalf("case %d: a row without expressions is not in place", n)
		}
		var f frame
		f.ip, f.cfa = sp0+uint64(rng.IntN(64)), sp0+uint64(rng.IntN(64))
		for i := range f.locs {
			f.locs[i] = loc{locKind(rng.IntN(4)), sp0 + uint64(rng.IntN(300)) - 16}
		}
		copied := r
		copied.inPlace = false
		f1, f2 := f, f
		r1, err1 := u.apply(&f1, &r)
		r2, err2 := u.apply(&f2, &copied)
		if r1 != r2 || !errors.Is(err1, err2) && err1 != err2 || f1 != f2 {
			t.Fatalf("case %d: in place %d, %v, %+v; copied %d, %v, %+v", n, r1, err1, f1, r2, err2, f2)
		}
	}
}
