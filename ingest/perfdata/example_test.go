package perfdata_test

import (
	"fmt"
	"log"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

func Example() {
	r, err := perfdata.Open("testdata/sleep.data")
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	samples := 0
	for r.Next() {
		switch rec := r.Record().(type) {
		case *perfdata.Sample:
			samples++
		case *perfdata.Mmap:
			if rec.CPUMode() == perfdata.CPUModeKernel {
				fmt.Printf("kernel map %s at %#x\n", rec.Filename, rec.Addr)
			}
		}
	}
	if err := r.Err(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("samples:", samples)
	fmt.Println("arch:", r.Features().Arch)
	// Output:
	// kernel map [kernel.kallsyms]_text at 0xffffffff81000000
	// samples: 3
	// arch: x86_64
}
