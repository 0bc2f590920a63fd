package gen_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/corpus/gen"
	"github.com/kmapindex/kmapindex/index/mapset"
)

func Example() {
	tmp, err := os.MkdirTemp("", "gen")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "arm64")
	sum, err := gen.Generate(gen.Params{Arch: "arm64", Modules: 20, BPF: 5, Procs: 4, Samples: 500, Seed: 1, KernelSymbols: 500}, dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sum.Arch, sum.Modules, "modules,", sum.BPF, "BPF programs,", sum.Samples, "samples")
	c, err := corpus.Load(dir)
	if err != nil {
		log.Fatal(err)
	}
	ms, err := c.KernelMaps(mapset.BTree)
	if err != nil {
		log.Fatal(err)
	}
	m, _ := ms.Find(c.Landmarks.Text.Addr)
	fmt.Println("kernel map is [_text, _end):", m.Start == c.Landmarks.Text.Addr && m.End == c.Landmarks.End.Addr)
	// Output:
	// aarch64 20 modules, 5 BPF programs, 500 samples
	// kernel map is [_text, _end): true
}
