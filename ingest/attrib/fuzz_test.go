package attrib

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// FuzzRun attributes arbitrary recordings: whatever the reader accepts,
// the machine and the attribution must take without a panic, and both
// implementations must agree, in the script and in the children table.
func FuzzRun(f *testing.F) {
	ks := fuzzSeeds(f, "sleep", "ksym", "pipe", "callchain",
		"../../cmd/kbench/testdata/mixed/mixed.data") // events with and without callchains
	f.Fuzz(func(t *testing.T, data []byte) {
		// The script, then the children table (callchains cumulated,
		// perf's tree of far addresses kept).
		for _, children := range []bool{false, true} {
			var digests []string
			for _, im := range mapset.All {
				r, ok := fuzzReader(data)
				if !ok {
					return
				}
				opts := Options{Impl: im, Kallsyms: ks, DebugDir: "-", NoFiles: true, Script: io.Discard}
				if children {
					opts.Script, opts.Children = nil, true
				}
				res, err := Run(r, opts)
				if err != nil {
					return
				}
				digest := res.Digest()
				if children {
					var table bytes.Buffer
					if err := res.WriteTable(&table); err != nil {
						t.Fatal(err)
					}
					digest = table.String()
				}
				digests = append(digests, digest)
			}
			if len(digests) == 2 && digests[0] != digests[1] {
				t.Fatalf("children %v: btree and list differ:\n%s\n%s", children, digests[0], digests[1])
			}
		}
	})
}

// fuzzSeeds adds the committed recordings named (of ../perfdata/testdata)
// or at the paths given, those under 100 kB, to f's corpus, and returns
// the kallsyms subset their kernel samples resolve with.
func fuzzSeeds(f *testing.F, names ...string) []kallsyms.Symbol {
	for _, name := range names {
		file := name // a path, or a recording of ../perfdata/testdata
		if !strings.Contains(name, "/") {
			file = "../perfdata/testdata/" + name + ".data"
		}
		if b, err := os.ReadFile(file); err == nil && len(b) < 100_000 {
			f.Add(b)
		}
	}
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		f.Fatal(err)
	}
	return ks
}

// fuzzReader reads data as a file-mode recording, else as a pipe-mode
// one; false if neither header is valid.
func fuzzReader(data []byte) (*perfdata.Reader, bool) {
	r, err := perfdata.NewFileReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		if r, err = perfdata.NewReader(bytes.NewReader(data)); err != nil {
			return nil, false
		}
	}
	return r, true
}

// NoFiles leaves user symbols unresolved and changes nothing else.
func TestNoFiles(t *testing.T) {
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	run := func(noFiles bool) *Result {
		r, err := perfdata.Open("../perfdata/testdata/system.data")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		res, err := Run(r, Options{Kallsyms: ks, DebugDir: "-", NoFiles: noFiles})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	with, without := run(false), run(true)
	if with.Samples != without.Samples || len(with.ByMap) != len(without.ByMap) {
		t.Fatal("NoFiles changed the maps")
	}
	for k := range without.BySym {
		if !k.Kernel && k.DSO != "[unknown]" && k.Sym != "[unknown]" {
			t.Errorf("user symbol %s resolved without files", k.Sym)
		}
	}
}
