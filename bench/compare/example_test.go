package compare_test

import (
	"fmt"
	"log"
	"os"

	"github.com/kmapindex/kmapindex/bench/compare"
)

func Example() {
	r, err := compare.ReadFiles([]string{"testdata/pass.txt"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range r.Speedups() {
		if s.N == 10000 {
			fmt.Printf("%s: btree %s faster than list at n=%d (p=%.3f)\n", s.Bench, compare.FormatRatio(s.Ratio), s.N, s.P)
		}
	}
	if err := r.Gate(10); err != nil {
		log.Fatal(err)
	}
	fmt.Println("gate ≥10×: pass")
	fmt.Println(r.Gate(30))
	if err := r.WriteSpeedups(os.Stdout); err != nil {
		log.Fatal(err)
	}
	// Output:
	// KcoreOrder: btree 50.0× faster than list at n=10000 (p=0.002)
	// MergeIn: btree 25.0× faster than list at n=10000 (p=0.002)
	// Lookup: btree 36.0× faster than list at n=10000 (p=0.002)
	// gate ≥10×: pass
	// speedup gate (btree ≥ 30× faster than list) failed:
	// MergeIn/n=10000-2: btree is 25.0× faster than list, want ≥ 30× (p=0.002)
	// benchmark       n  speedup list/btree      p
	// KcoreOrder    100               1.01×  0.221
	// KcoreOrder   1000               5.50×  0.002
	// KcoreOrder  10000               50.0×  0.002
	// MergeIn       100              0.338×  0.002
	// MergeIn      1000               2.93×  0.002
	// MergeIn     10000               25.0×  0.002
	// Lookup        100              0.686×  0.002
	// Lookup       1000               4.50×  0.002
	// Lookup      10000               36.0×  0.002
}
