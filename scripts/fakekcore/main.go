// Command fakekcore makes a directory where perf and kbench take the kcore
// path on a machine without /proc/kcore: DIR/kallsyms (a copy of this
// boot's /proc/kallsyms), DIR/modules (a copy of /proc/modules, empty when
// there is none) and DIR/kcore, a header-only kcore ELF whose PT_LOAD
// segments cover the kernel's text, the module area and the direct map.
// Both tools then read kernel symbols with -kallsyms/--kallsyms
// DIR/kallsyms as they would /proc/kallsyms beside /proc/kcore (perf reads
// only the headers; kbench's -format json names the kcore it used).
//
//	go run ./scripts/fakekcore DIR
package main

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/kcore"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/fakekcore DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "fakekcore:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	text, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		return err
	}
	l, err := kallsyms.ReadListFile("/proc/kallsyms")
	if err != nil {
		return err
	}
	if l.Restricted() {
		return errors.New("/proc/kallsyms: every address is 0 (kptr_restrict): run as root")
	}
	stext, ok := l.FunctionStart("_stext")
	if !ok {
		return errors.New("/proc/kallsyms: no _stext")
	}
	modules, err := os.ReadFile("/proc/modules")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "kallsyms"), text, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "modules"), modules, 0o644); err != nil {
		return err
	}
	// x86_64's layout: the kernel text from the 2 MiB boundary below
	// _stext, then the module area up to the fixmap, and the direct map.
	textStart := stext &^ (2<<20 - 1)
	segs := []index.Segment{
		{Vaddr: textStart, Size: 0xffffffffa0000000 - textStart, Offset: 0x1000},
		{Vaddr: 0xffffffffa0000000, Size: 0x5f000000, Offset: 0x10000000},
		{Vaddr: 0xffff888000000000, Size: 0x100000000, Offset: 0x100000000},
	}
	if textStart >= 0xffffffffa0000000 {
		return fmt.Errorf("_stext at %#x: not the x86_64 layout this tool writes", stext)
	}
	f, err := os.Create(filepath.Join(dir, "kcore"))
	if err != nil {
		return err
	}
	if err := kcore.WriteHeaders(f, segs, elf.EM_X86_64, binary.LittleEndian); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
