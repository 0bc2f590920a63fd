package symbols

import "testing"

// The committed module object of ingest/modsec: noinstr_fn is at offset
// 5 of .noinstr.text (sh_offset 0x5c), 37 bytes long.
func TestSection(t *testing.T) {
	const ko = "../modsec/testdata/my-mod.ko"
	tab, err := Section(ko, ".noinstr.text")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		off  uint64
		want string
	}{{0x5c, "noinstr_first"}, {0x5c + 5, "noinstr_fn"}, {0x5c + 5 + 36, "noinstr_fn"}} {
		if got := tab.Name(tc.off); got != tc.want {
			t.Errorf("Name(%#x) = %s, want %s", tc.off, got, tc.want)
		}
	}
	if got := tab.Name(0x5c + 5 + 37 + 0x1000); got != Unknown {
		t.Errorf("far past the section: %s", got)
	}
	if _, err := Section(ko, ".nope"); err == nil {
		t.Error("a missing section gave no error")
	}
	if _, err := Section("/does/not/exist.ko", ".text"); err == nil {
		t.Error("a missing file gave no error")
	}
}
