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

// A flat profile reads each sample of fixed-size fields with
// NextFixedSample, and everything else with Next.
func ExampleReader_NextFixedSample() {
	r, err := perfdata.Open("testdata/callchain.data")
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	var s perfdata.FixedSample
	byMode := map[perfdata.CPUMode]int{}
	others := 0
	for {
		if r.NextFixedSample(&s, true) { // callchains stepped over
			byMode[s.CPUMode()]++
			continue
		}
		if !r.Next() {
			break
		}
		others++ // MMAP, COMM, FINISHED_ROUND, ... (and a sample the fast path left)
	}
	if err := r.Err(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("kernel:", byMode[perfdata.CPUModeKernel], "user:", byMode[perfdata.CPUModeUser], "other records:", others)
	// Output:
	// kernel: 1 user: 195 other records: 15
}
