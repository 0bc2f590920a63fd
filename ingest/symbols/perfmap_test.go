package symbols

import (
	"strings"
	"testing"
)

func TestPerfMap(t *testing.T) {
	const text = "7f0000001000 40 jit_a\n" +
		"0x7f0000001040 0x20 Interpreter: LFoo;bar\n" +
		"7f0000002000 10 x\n" + // too short a line after the size: skipped
		"zz 10 nodigits\n" + // START reads as 0 from no digits
		"7f0000003000 8 last" // no newline: perf drops the last byte
	tab, err := PerfMap(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr uint64
		want string
	}{
		{0x7f0000001000, "jit_a"}, {0x7f000000103f, "jit_a"}, {0x7f0000001040, "Interpreter: LFoo;bar"},
		{0x7f000000105f, "Interpreter: LFoo;bar"}, {0x7f0000001060, Unknown},
		{0x7f0000002005, Unknown}, {0x7f0000003004, "las"},
	} {
		if got := tab.Name(tc.addr); got != tc.want {
			t.Errorf("%#x: %q, want %q", tc.addr, got, tc.want)
		}
	}
	for _, tc := range []struct {
		s string
		v uint64
		n int
	}{{"ff rest", 0xff, 2}, {"  0x1F", 0x1f, 6}, {"0xg", 0, 1}, {"-1", ^uint64(0), 2}, {"x", 0, 0}, {"fffffffffffffffff", ^uint64(0), 17}} {
		if v, n := strtoull16(tc.s); v != tc.v || n != tc.n {
			t.Errorf("strtoull16(%q) = %#x, %d; want %#x, %d", tc.s, v, n, tc.v, tc.n)
		}
	}
}
