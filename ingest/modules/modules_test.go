package modules

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []index.Module
		err  error
		line int
	}{
		{name: "K7", in: "nf_tables 315392 0 - Live 0xffffffffc0a00000\n",
			want: []index.Module{{Name: "nf_tables", Start: 0xffffffffc0a00000, Size: 315392}}},
		{name: "no final newline: perf drops the last digit", in: "a 4096 0 - Live 0xffffffffc0b00000\nnf_tables 315392 0 - Live 0xffffffffc0a00000",
			want: []index.Module{{Name: "a", Start: 0xffffffffc0b00000, Size: 4096, Line: 1}, {Name: "nf_tables", Start: 0xffffffffc0a0000, Size: 315392, Line: 2}}},
		{name: "carriage returns", in: "nf_tables 315392 0 - Live 0xffffffffc0a00000\r\n",
			want: []index.Module{{Name: "nf_tables", Start: 0xffffffffc0a00000, Size: 315392}}},
		{name: "taint flags and x in deps", in: "xt_nat 16384 2 x_tables,nf_nat, Live 0xffffffffc0b00000 (OE)\n",
			want: []index.Module{{Name: "xt_nat", Start: 0xffffffffc0b00000, Size: 16384}}},
		{name: "restricted", in: "nf_tables 315392 0 - Live 0x0000000000000000\n",
			want: []index.Module{{Name: "nf_tables", Start: 0, Size: 315392}}},
		{name: "size in hex and octal, tab separator", in: "a 0x100 0 - Live 0x1000\nb 010\t0 - Live 0x2000\n",
			want: []index.Module{{Name: "a", Start: 0x1000, Size: 0x100}, {Name: "b", Start: 0x2000, Size: 8}}},
		{name: "start is after the last x", in: "m 16 0 - Live 0xabc 0x5\n",
			want: []index.Module{{Name: "m", Start: 5, Size: 16}}},
		{name: "no digits after x read as 0", in: "m 16 0 - Live 0x\n",
			want: []index.Module{{Name: "m", Start: 0, Size: 16}}},
		{name: "no digits in size field reads 0 as C does", in: "m  0 x1\n",
			want: []index.Module{{Name: "m", Start: 1, Size: 0}}},
		{name: "skipped lines", in: "\nno_eks_here 100 0 - Live 0\nnospace0x10\nm 12abc 0 - Live 0x10\nm 12\n" +
			"ok 4096 0 - Live 0xffffffffc0000000\n",
			want: []index.Module{{Name: "ok", Start: 0xffffffffc0000000, Size: 4096, Line: 6}}},
		{name: "address overflow", in: "ok 1 0 - Live 0x1\nm 1 0 - Live 0x10000000000000000\n", err: ErrRange, line: 2},
		{name: "size overflow", in: "m 18446744073709551616 0 - Live 0x10\n", err: ErrRange, line: 1},
		{name: "range beyond 2^64", in: "m 4096 0 - Live 0xfffffffffffff001\n", err: ErrRange, line: 1},
		{name: "range up to 2^64-1 is fine", in: "m 4095 0 - Live 0xfffffffffffff000\n",
			want: []index.Module{{Name: "m", Start: 0xfffffffffffff000, Size: 4095}}},
		{name: "line too long", in: "m 1 0 - Live 0x1\n" + strings.Repeat("a", MaxLine+1) + "\n", err: ErrLineTooLong, line: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.in))
			if tt.err != nil {
				var pe *ParseError
				if !errors.Is(err, tt.err) || !errors.As(err, &pe) || pe.Line != tt.line {
					t.Fatalf("err = %v, want %v at line %d", err, tt.err, tt.line)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				want := tt.want[i]
				if want.Line == 0 {
					want.Line = i + 1 // one module a line
				}
				if got[i] != want {
					t.Errorf("module %d = %+v, want %+v", i, got[i], want)
				}
			}
		})
	}
}

func TestStrtoull(t *testing.T) {
	tests := []struct {
		in       string
		base     int
		v        uint64
		n        int
		overflow bool
	}{
		{"", 0, 0, 0, false},
		{"abc", 0, 0, 0, false},
		{"123 ", 0, 123, 3, false},
		{"  +7x", 0, 7, 4, false},
		{"-1", 0, 1<<64 - 1, 2, false},
		{"0x1F", 0, 0x1f, 4, false},
		{"0xg", 0, 0, 1, false},
		{"017", 0, 15, 3, false},
		{"09", 0, 0, 1, false},
		{"ffffffffc0a00000 ", 16, 0xffffffffc0a00000, 16, false},
		{"0Xff", 16, 0xff, 4, false},
		{"18446744073709551615", 0, 1<<64 - 1, 20, false},
		{"18446744073709551616", 0, 0, 20, true},
	}
	for _, tt := range tests {
		v, n, o := strtoull([]byte(tt.in), tt.base)
		if (o && !tt.overflow) || (!o && (v != tt.v)) || n != tt.n || o != tt.overflow {
			t.Errorf("strtoull(%q, %d) = %#x, %d, %v; want %#x, %d, %v", tt.in, tt.base, v, n, o, tt.v, tt.n, tt.overflow)
		}
	}
}

func TestReadFile(t *testing.T) {
	mods, err := ReadFile("testdata/modules")
	if err != nil {
		t.Fatal(err)
	}
	want := []index.Module{
		{Name: "nf_tables", Start: 0xffffffffc0a00000, Size: 315392, Line: 1},
		{Name: "x_tables", Start: 0xffffffffc0a3e000, Size: 61440, Line: 2},
		{Name: "nvidia", Start: 0xffffffffc1000000, Size: 56000512, Line: 3},
		{Name: "ip_tables", Start: 0xffffffffc0b20000, Size: 32768, Line: 4},
	}
	if len(mods) != len(want) {
		t.Fatalf("got %v", mods)
	}
	for i := range mods {
		if mods[i] != want[i] {
			t.Errorf("module %d = %+v, want %+v", i, mods[i], want[i])
		}
	}
	if Restricted(mods) {
		t.Error("Restricted = true")
	}
	// K7: [nf_tables] covers [0xffffffffc0a00000, 0xffffffffc0a4d000).
	if end := mods[0].Start + mods[0].Size; end != 0xffffffffc0a4d000 {
		t.Errorf("nf_tables end %#x", end)
	}

	r, err := ReadFile("testdata/modules.restricted")
	if err != nil {
		t.Fatal(err)
	}
	if !Restricted(r) || Restricted(nil) {
		t.Error("Restricted wrong")
	}

	if _, err := ReadFile("testdata/missing"); err == nil || !strings.Contains(err.Error(), "testdata/missing") {
		t.Errorf("err = %v", err)
	}
	p := t.TempDir() + "/modules"
	if err := os.WriteFile(p, []byte("a 1 0 - Live 0x1\nb 99999999999999999999 0 - Live 0x2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), p+":2:") {
		t.Errorf("err = %v, want it to name %s:2", err, p)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func TestReadError(t *testing.T) {
	if _, err := Parse(errReader{}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v", err)
	}
}

func TestProcModules(t *testing.T) {
	mods, err := ReadFile("/proc/modules")
	if err != nil {
		t.Skipf("cannot read /proc/modules: %v", err)
	}
	t.Logf("%d modules, restricted=%v", len(mods), Restricted(mods))
}

func FuzzParse(f *testing.F) {
	f.Add("nf_tables 315392 0 - Live 0xffffffffc0a00000\n")
	f.Add("a 0x100 0 - Live 0x1000\nb 010\t0 - Live 0x2000\n")
	f.Add("m -1 0 - Live 0x10000000000000000")
	f.Fuzz(func(t *testing.T, in string) {
		mods, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, m := range mods {
			if m.Start+m.Size < m.Start {
				t.Fatalf("module %+v wraps", m)
			}
		}
	})
}
