package testbuild

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCompile(t *testing.T) {
	if _, err := Tool("no-such-compiler-kbench"); !errors.Is(err, ErrMissing) {
		t.Errorf("a missing compiler: %v", err)
	}
	dir := t.TempDir()
	src := Source(t, dir, "ok.c", "int main(void) { return 0; }\n")
	bin := filepath.Join(dir, "ok")
	if err := Compile(t, "gcc", "-o", bin, src); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Error(err)
	}
	bad := Source(t, dir, "bad.c", "int main(void) { return }\n")
	var ce *Error
	if err := Compile(t, "gcc", "-o", bin, bad); !errors.As(err, &ce) || ce.Output == "" {
		t.Errorf("a bad source: %v", err)
	}
}
