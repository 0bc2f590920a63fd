package symbols

import (
	"testing"

	"github.com/ianlancetaylor/demangle"
)

// The kernel red-black tree is reproduced, not replaced by an interval
// index or a sorted search, because perf's answer for overlapping symbols
// depends on the tree's shape (symbols__find stops at the first node on
// its search path that holds the address). Inserting a, b, c in order
// makes b the root; an address inside a but past b and c goes right from
// b, then right from c, and finds nothing, though a holds it.
func TestRBTreeDivergesFromInterval(t *testing.T) {
	syms := []Symbol{
		{Name: "a", Start: 0x1000, End: 0x3000}, // holds b and c
		{Name: "b", Start: 0x1800, End: 0x1900},
		{Name: "c", Start: 0x2000, End: 0x2100},
	}
	tab := Build(syms)
	for _, tc := range []struct {
		addr uint64
		want string // perf's tree; "" for none
	}{
		{0x1200, "a"}, // left of the root b, into a
		{0x1850, "b"},
		{0x2050, "c"},
		{0x2500, ""}, // right of b, right of c: a, which holds it, is never visited
	} {
		got := ""
		if s, ok := tab.Find(tc.addr); ok {
			got = s.Name
		}
		if got != tc.want {
			t.Errorf("Find(%#x) = %q, want %q (perf's tree)", tc.addr, got, tc.want)
		}
	}
}

// perf's Rust pass is hand-written because no demangling library runs it:
// perf takes the C++ demangler's output and, when it ends in a Rust-like
// "::h" and 16 hex digits, strips the hash (demangle-rust.c). A name that
// is not valid legacy Rust but is valid C++ (a trailing parameter list)
// keeps the hash in github.com/ianlancetaylor/demangle and loses it in
// perf: perf 6.1 prints "foo::bar" for a function so named (checked by
// recording one here).
func TestRustPassDivergesFromLibrary(t *testing.T) {
	const name = "_ZN3foo3bar17h1c3fe0c6bcf6df5aEv"
	if got := Demangle(name); got != "foo::bar" {
		t.Errorf("Demangle(%q) = %q, want perf's foo::bar", name, got)
	}
	if lib := demangle.Filter(name, demangle.NoParams); lib != "foo::bar::h1c3fe0c6bcf6df5a" {
		t.Errorf("the library now gives %q: if it strips the hash itself, the pass may go", lib)
	}
}
