package attrib_test

import (
	"fmt"
	"log"

	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// Run attributes every sample of a recording: here a flat table's
// counts, with no kernel symbols and no files read beyond the
// recording.
func ExampleRun() {
	r, err := perfdata.Open("testdata/twoevents-g.data")
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	res, err := attrib.Run(r, attrib.Options{NoFiles: true, VmlinuxPath: []string{}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Samples, "samples,", res.Unknown, "without a map")
	// Output: 284 samples, 0 without a map
}

// UnwindsUserStacks tells whether a run unwinds user stacks, which only
// recordings of --call-graph dwarf have: this one's callchains are the
// kernel's, walked by frame pointers.
func ExampleUnwindsUserStacks() {
	r, err := perfdata.Open("testdata/twoevents-g.data")
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	fmt.Println(attrib.UnwindsUserStacks(r, attrib.Options{Children: true}))
	// Output: false
}
