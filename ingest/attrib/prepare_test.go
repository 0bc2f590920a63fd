package attrib

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kmapindex/kmapindex/ingest/kallsyms"
)

// prepareKernel loads kallsyms only once started, and builds the kernel's
// tables in the background only when the hint allows them, relocated by
// the hint's reference symbol.
func TestPrepareKernel(t *testing.T) {
	list := kallsyms.NewList([]kallsyms.Symbol{
		{Addr: 0xffffffff81000000, Type: 'T', Name: "_text"},
		{Addr: 0xffffffff81001000, Type: 't', Name: "f"},
		{Addr: 0xffffffff81002000, Type: 'T', Name: "_etext"},
	})
	tests := []struct {
		name      string
		hint      *kernelHint // nil: not started before take
		early     bool        // readEarly first
		kcore     bool        // kcoreLikely
		tables    bool
		delta     uint64
		loadCalls int
	}{
		{name: "taken unstarted", hint: nil, tables: false, loadCalls: 1},
		{name: "no reference symbol", hint: &kernelHint{}, tables: true, loadCalls: 1},
		{name: "relocated", hint: &kernelHint{refName: "_text", refAddr: 0xffffffff80000000}, tables: true, delta: 0x1000000, loadCalls: 1},
		{name: "reference not in kallsyms", hint: &kernelHint{refName: "_stext", refAddr: 1}, tables: false, loadCalls: 1},
		{name: "modules", hint: &kernelHint{noTables: true}, tables: false, loadCalls: 1},
		{name: "read early, relocated", hint: &kernelHint{refName: "_text", refAddr: 0xffffffff80000000}, early: true, tables: true, delta: 0x1000000, loadCalls: 1},
		{name: "read early, taken unstarted", hint: nil, early: true, tables: false, loadCalls: 1},
		{name: "kcore beside", hint: &kernelHint{}, kcore: true, tables: false, loadCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			kp := prepareKernel(func([]byte) (*kallsyms.List, error) { calls++; return list, nil }, func() bool { return tt.kcore })
			if kp.waiting() {
				t.Error("waiting before anything began")
			}
			if tt.early {
				kp.readEarly(nil)
				kp.readEarly(nil) // a second read does nothing
			}
			if tt.hint != nil {
				kp.start(*tt.hint)
				kp.start(kernelHint{noTables: true}) // a second start does nothing
			}
			p := kp.take()
			kp.loaded()
			if kp.waiting() {
				t.Error("waiting after take")
			}
			if calls != tt.loadCalls || p.syms != list || p.err != nil {
				t.Fatalf("load called %d times, list %p err %v", calls, p.syms, p.err)
			}
			if (p.kt != nil) != tt.tables || p.delta != tt.delta {
				t.Fatalf("tables %v delta %#x, want %v %#x", p.kt != nil, p.delta, tt.tables, tt.delta)
			}
			if p.kt != nil {
				if got := p.kt.Kernel.Name(0xffffffff81001000 - tt.delta); got != "f" {
					t.Errorf("relocated lookup = %q, want f", got)
				}
			}
		})
	}
	t.Run("never started", func(t *testing.T) {
		kp := prepareKernel(func([]byte) (*kallsyms.List, error) { t.Error("load called"); return nil, nil }, func() bool { return false })
		kp.loaded()
		if kp.waiting() {
			t.Error("waiting, never started")
		}
	})
	t.Run("read early, never started", func(t *testing.T) {
		// loaded waits for the read: Run returns with nothing running.
		var read bool
		kp := prepareKernel(func([]byte) (*kallsyms.List, error) {
			time.Sleep(10 * time.Millisecond)
			read = true
			return list, nil
		}, func() bool { return false })
		kp.readEarly(nil)
		if kp.waiting() {
			t.Error("waiting for a read no kernel map asked for")
		}
		kp.loaded()
		if !read {
			t.Error("loaded returned before the read ended")
		}
	})
	t.Run("waiting", func(t *testing.T) {
		// Waiting from start until the tables are ready, not before.
		gate := make(chan struct{})
		kp := prepareKernel(func([]byte) (*kallsyms.List, error) { <-gate; return list, nil }, func() bool { return false })
		kp.readEarly(nil)
		if kp.waiting() {
			t.Error("waiting before start")
		}
		kp.start(kernelHint{})
		if !kp.waiting() {
			t.Error("not waiting while the load runs")
		}
		close(gate)
		if p := kp.take(); p.kt == nil {
			t.Error("no tables")
		}
		if kp.waiting() {
			t.Error("waiting once the tables are taken")
		}
		kp.loaded()
	})
	t.Run("error", func(t *testing.T) {
		bad := errors.New("bad")
		kp := prepareKernel(func([]byte) (*kallsyms.List, error) { return nil, bad }, func() bool { return false })
		kp.start(kernelHint{})
		if p := kp.take(); p.err != bad || p.kt != nil {
			t.Errorf("got %+v", p)
		}
		kp.loaded()
	})
}

// The kallsyms tables are left unbuilt only where perf would read kcore:
// a readable regular kcore beside a file named kallsyms.
func TestKcoreFileBeside(t *testing.T) {
	dir := t.TempDir()
	ks := filepath.Join(dir, "kallsyms")
	other := filepath.Join(dir, "ksyms")
	for _, f := range []string{ks, other} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if kcoreFileBeside(ks) {
		t.Error("no kcore: true")
	}
	if err := os.Mkdir(filepath.Join(dir, "kcore"), 0o755); err != nil {
		t.Fatal(err)
	}
	if kcoreFileBeside(ks) {
		t.Error("a directory named kcore: true")
	}
	os.Remove(filepath.Join(dir, "kcore"))
	if err := os.WriteFile(filepath.Join(dir, "kcore"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !kcoreFileBeside(ks) {
		t.Error("kcore beside kallsyms: false")
	}
	if kcoreFileBeside(other) || kcoreFileBeside("") {
		t.Error("a file not named kallsyms: true")
	}
}
