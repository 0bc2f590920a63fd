package attrib

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// A recording read through a mapping (perfdata.Mapped: callchains and
// DWARF user stacks read where they lie in the file) attributes as the
// same recording read through a buffer (copies of them): the script,
// the flat table and the children table, byte for byte.
func TestMappedAgreesWithBuffered(t *testing.T) {
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	files := append(recordings(t), filepath.Join("..", "..", "cmd", "kbench", "testdata", "dwarf", "dwarf.data"))
	views := map[string]Options{
		"script":   {Script: &bytes.Buffer{}},
		"table":    {},
		"children": {Children: true},
	}
	for _, f := range files {
		for view, base := range views {
			var outs [2]string
			for i, opts := range [][]perfdata.Option{nil, {perfdata.Mapped()}} {
				r, err := perfdata.Open(f, opts...)
				if err != nil {
					t.Fatal(err)
				}
				if (r.MappedData() != nil) != (i == 1) && !r.PipeMode() {
					t.Fatalf("%s: Open with %d options: mapped %v", f, len(opts), r.MappedData() != nil)
				}
				o := base
				o.Impl, o.Kallsyms, o.DebugDir = mapset.BTree, ks, "-"
				var script bytes.Buffer
				if o.Script != nil {
					o.Script = &script
				}
				res, err := Run(r, o)
				r.Close()
				if err != nil {
					t.Fatalf("%s %s: %v", f, view, err)
				}
				var table bytes.Buffer
				if err := res.WriteTable(&table); err != nil {
					t.Fatal(err)
				}
				if view == "script" && script.Len() == 0 || res.Samples == 0 {
					t.Fatalf("%s %s: no output", f, view)
				}
				outs[i] = script.String() + table.String() + res.Digest()
			}
			if outs[0] != outs[1] {
				t.Errorf("%s %s: mapped and buffered differ", filepath.Base(f), view)
			}
		}
	}
}
