package kallsyms

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index"
)

func lm(a uint64) index.Landmark { return index.Landmark{Addr: a, OK: true} }

func TestParseLines(t *testing.T) {
	long := strings.Repeat("n", KsymNameLen-1)
	tests := []struct {
		name string
		in   string
		want []Symbol
		err  error // wrapped error expected, nil for success
		line int   // line of the error
	}{
		{name: "empty", in: "", want: nil},
		{name: "one", in: "ffffffff81000000 T _text\n",
			want: []Symbol{{0xffffffff81000000, 'T', "_text", ""}}},
		{name: "no final newline", in: "ffffffff81000000 T _text",
			want: []Symbol{{0xffffffff81000000, 'T', "_text", ""}}},
		{name: "module", in: "ffffffffc0a00000 t nf_tables_init_net\t[nf_tables]\n",
			want: []Symbol{{0xffffffffc0a00000, 't', "nf_tables_init_net", "nf_tables"}}},
		{name: "bpf", in: "ffffffffc0186388 t bpf_prog_be31ae23198a0378_sd_devices\t[bpf]\n",
			want: []Symbol{{0xffffffffc0186388, 't', "bpf_prog_be31ae23198a0378_sd_devices", "bpf"}}},
		{name: "unbracketed tag kept raw", in: "10 t f\tmod\n",
			want: []Symbol{{0x10, 't', "f", "mod"}}},
		{name: "upper-case hex and short address", in: "FfFf A x\n",
			want: []Symbol{{0xffff, 'A', "x", ""}}},
		{name: "restricted zeros", in: "0000000000000000 T _text\n",
			want: []Symbol{{0, 'T', "_text", ""}}},
		{name: "empty name kept as perf does", in: "10 T \n",
			want: []Symbol{{0x10, 'T', "", ""}}},
		{name: "name of 511 bytes", in: "10 T " + long + "\n",
			want: []Symbol{{0x10, 'T', long, ""}}},
		{name: "skipped lines", in: "\n# comment\nxyz T a\n0x10 T b\n 10 T c\n10  T d\n10 T\n10 TT e\n10\tT f\n20 t ok\n",
			want: []Symbol{{0x20, 't', "ok", ""}}},
		{name: "name of 512 bytes", in: "10 t a\n20 T " + long + "x\n", err: ErrNameTooLong, line: 2},
		{name: "name plus module tag of 512 bytes", in: "20 T " + long[:500] + "\t[" + strings.Repeat("m", 9) + "]\n",
			err: ErrNameTooLong, line: 1},
		{name: "very long line", in: "1\n20 T " + strings.Repeat("y", 10000) + "\n30 T z\n", err: ErrNameTooLong, line: 2},
		{name: "very long skipped line", in: strings.Repeat("z", 10000) + "\n30 T z\n",
			want: []Symbol{{0x30, 'T', "z", ""}}},
		{name: "17 hex digits", in: "10000000000000000 T big\n", err: ErrAddrRange, line: 1},
		{name: "leading zeros are fine", in: "0000000000000000000000ffffffff81000000 T z\n",
			want: []Symbol{{0xffffffff81000000, 'T', "z", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadAll(strings.NewReader(tt.in))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				var pe *ParseError
				if !errors.As(err, &pe) || pe.Line != tt.line {
					t.Fatalf("err = %v, want line %d", err, tt.line)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d symbols %v, want %v", len(got), got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("symbol %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParseCallbackError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := Parse(strings.NewReader("1 T a\n2 T b\n3 T c\n"), func(Symbol) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	var pe *ParseError
	if !errors.Is(err, stop) || !errors.As(err, &pe) || pe.Line != 2 || n != 2 {
		t.Fatalf("err = %v after %d calls, want stop at line 2", err, n)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func TestParseReadError(t *testing.T) {
	err := Parse(errReader{}, func(Symbol) error { return nil })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v", err)
	}
}

func TestReadFileErrorsNameFile(t *testing.T) {
	_, err := ReadFile("testdata/does-not-exist")
	if err == nil || !strings.Contains(err.Error(), "testdata/does-not-exist") {
		t.Fatalf("err = %v", err)
	}
	dir := t.TempDir()
	p := dir + "/kallsyms"
	if err := os.WriteFile(p, []byte("1 T a\n10000000000000000 T b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFile(p)
	if err == nil || !strings.Contains(err.Error(), p+":2:") {
		t.Fatalf("err = %v, want it to name %s:2", err, p)
	}
}

func TestLandmarks(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want index.Landmarks
	}{
		{name: "none", in: "1 T a\n", want: index.Landmarks{}},
		{name: "x86", in: "ffffffff81000000 T _stext\nffffffff81000000 T _text\nffffffff82209988 T _etext\n" +
			"ffffffff83546000 D _edata\nffffffff84200000 B _end\n",
			want: index.Landmarks{Text: lm(0xffffffff81000000), Stext: lm(0xffffffff81000000),
				Etext: lm(0xffffffff82209988), Edata: lm(0xffffffff83546000), End: lm(0xffffffff84200000)}},
		{name: "first in file order wins", in: "30 T _text\n20 T _text\n10 b _end\n5 D _end\n",
			want: index.Landmarks{Text: lm(0x30), End: lm(0x10)}},
		{name: "function types only for text", in: "1 D _text\n2 d _stext\n3 R _etext\n4 t _text\n5 w _stext\n6 W _etext\n",
			want: index.Landmarks{Text: lm(4), Stext: lm(5), Etext: lm(6)}},
		{name: "A alias but not a", in: "1 a _text\n2 A _text\n",
			want: index.Landmarks{Text: lm(2)}},
		{name: "module symbols ignored", in: "1 T _text\t[m]\n2 D _end\t[bpf]\n3 T _text\n",
			want: index.Landmarks{Text: lm(3)}},
		{name: "restricted still found", in: "0 T _text\n0 B _end\n",
			want: index.Landmarks{Text: lm(0), End: lm(0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			syms, err := ReadAll(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := Landmarks(syms); got != tt.want {
				t.Errorf("Landmarks = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRestricted(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", false},
		{"0000000000000000 T _text\n0000000000000000 t f\t[m]\n", true},
		{"0000000000000000 T _text\nffffffff81000000 T f\n", false},
	}
	for _, tt := range tests {
		syms, err := ReadAll(strings.NewReader(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		if got := Restricted(syms); got != tt.want {
			t.Errorf("Restricted(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestExcerpt(t *testing.T) {
	syms, err := ReadFile("testdata/kallsyms.excerpt")
	if err != nil {
		t.Fatal(err)
	}
	if len(syms) != 203 {
		t.Errorf("got %d symbols, want 203", len(syms))
	}
	want := index.Landmarks{Text: lm(0xffffffff81000000), Stext: lm(0xffffffff81000000),
		Etext: lm(0xffffffff82209988), Edata: lm(0xffffffff83546000), End: lm(0xffffffff84200000)}
	if got := Landmarks(syms); got != want {
		t.Errorf("Landmarks = %+v, want %+v", got, want)
	}
	if Restricted(syms) {
		t.Error("Restricted = true")
	}
	mods := map[string]int{}
	for _, s := range syms {
		mods[s.Module]++
	}
	if mods["nf_tables"] != 3 || mods["x_tables"] != 2 || mods["bpf"] != 4 {
		t.Errorf("module counts %v", mods)
	}
	// Round trip through String.
	var b strings.Builder
	for _, s := range syms {
		b.WriteString(s.String() + "\n")
	}
	again, err := ReadAll(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range syms {
		if again[i] != syms[i] {
			t.Fatalf("round trip %d: %+v != %+v", i, again[i], syms[i])
		}
	}
}

// TestProcKallsyms reads the running kernel's symbols when it can.
func TestProcKallsyms(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	syms, err := ReadFile("/proc/kallsyms")
	if err != nil {
		t.Skipf("cannot read /proc/kallsyms: %v", err)
	}
	if len(syms) == 0 {
		t.Skip("empty /proc/kallsyms")
	}
	if Restricted(syms) {
		t.Skip("/proc/kallsyms is restricted (kptr_restrict)")
	}
	l := Landmarks(syms)
	t.Logf("%d symbols; landmarks %+v", len(syms), l)
	start, ok := l.KernelStart()
	if !ok || !l.Etext.OK {
		t.Fatalf("kernel start or _etext missing: %+v", l)
	}
	if l.Text.OK && l.Stext.OK && l.Text.Addr > l.Stext.Addr {
		t.Errorf("_text %#x > _stext %#x", l.Text.Addr, l.Stext.Addr)
	}
	if s, _ := l.TextAddr(); s >= l.Etext.Addr || start > s {
		t.Errorf("text landmarks out of order: %+v", l)
	}
	// Kernels without CONFIG_KALLSYMS_ALL list no data symbols.
	prev := l.Etext.Addr
	for _, x := range []struct {
		name string
		lm   index.Landmark
	}{{"_edata", l.Edata}, {"_end", l.End}} {
		if !x.lm.OK {
			t.Logf("%s not listed (no CONFIG_KALLSYMS_ALL?)", x.name)
			continue
		}
		if x.lm.Addr < prev {
			t.Errorf("%s %#x below previous landmark %#x", x.name, x.lm.Addr, prev)
		}
		prev = x.lm.Addr
	}
}

func BenchmarkParseExcerpt(b *testing.B) {
	data, err := os.ReadFile("testdata/kallsyms.excerpt")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := Parse(strings.NewReader(string(data)), func(Symbol) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// NewList keeps names of any length, in pages of their own beyond a
// page's size, and names every symbol back through NameRef.
func TestNewListLongNames(t *testing.T) {
	long := strings.Repeat("x", 70000)
	syms := []Symbol{
		{0x10, 'T', "a", ""},
		{0x20, 't', long, "mod"},
		{0x30, 'T', long + "y", ""},
		{0x40, 'T', "b", "m"},
	}
	l := NewList(syms)
	pages := l.NamePages()
	for i, s := range syms {
		if got := l.At(i); got != s {
			t.Errorf("At(%d) = %.40v…, want %.40v…", i, got, s)
		}
		ref, n := l.NameRef(i)
		p := pages[ref>>PageBits]
		o := int(ref & (1<<PageBits - 1))
		if got := p[o : o+n]; got != s.Name {
			t.Errorf("NameRef(%d) names %.20q… (%d bytes), want %d bytes", i, got, len(got), len(s.Name))
		}
	}
	if got := l.TaggedName(1); got != long+"\t[mod]" {
		t.Errorf("TaggedName(1) has %d bytes, want %d", len(got), len(long)+6)
	}
}

// unhex (a table) agrees with strconv on every byte.
func TestUnhex(t *testing.T) {
	for c := range 256 {
		want, err := strconv.ParseUint(string([]byte{byte(c)}), 16, 64)
		got, ok := unhex(byte(c))
		if ok != (err == nil) || ok && got != want {
			t.Errorf("unhex(%q) = %d, %v; strconv: %d, %v", byte(c), got, ok, want, err)
		}
	}
}
