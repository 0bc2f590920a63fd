package attrib

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/machine"
)

// callerOrderReference is perf's walk as walkCallerOrder first had it
// (thread__resolve_callchain_sample with ORDER_CALLER, find_prev_cpumode
// per frame), kept as the oracle of callerOrder.
func callerOrderReference(chain []uint64) (frames [][2]uint64, valid bool) {
	cpumode := uint8(machine.CPUModeUser)
	prevMarker := func(ent int) bool {
		for ent--; ent >= 0; ent-- {
			if chain[ent] >= contextMax {
				mode, ok := contextMode(chain[ent])
				cpumode = mode
				return ok
			}
		}
		return true
	}
	if !prevMarker(len(chain)) {
		return frames, false
	}
	for j, n := len(chain)-1, 0; j >= 0 && n < maxStack; j-- {
		ip := chain[j]
		if ip >= contextMax {
			if !prevMarker(j) {
				return frames, false
			}
			continue
		}
		n++
		frames = append(frames, [2]uint64{ip, uint64(cpumode)})
	}
	return frames, true
}

// callerOrder yields the reference's frames, in order, and its validity,
// on random chains: markers known and unknown anywhere, runs of frames
// around maxStack long.
func TestCallerOrderMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	markers := []uint64{contextKernel, contextUser, contextHV, contextGuestKernel, contextMax, ^uint64(0)}
	invalid := 0
	for i := range 20000 {
		chain := make([]uint64, rng.IntN(2*maxStack+10))
		for j := range chain {
			if rng.IntN(12) == 0 {
				chain[j] = markers[rng.IntN(len(markers))]
			} else {
				chain[j] = rng.Uint64N(contextMax)
			}
		}
		want, wantValid := callerOrderReference(chain)
		var got [][2]uint64
		gotValid := walkCallerOrder(chain, func(ip uint64, cpumode uint8) {
			got = append(got, [2]uint64{ip, uint64(cpumode)})
		})
		if gotValid != wantValid || !slices.Equal(got, want) {
			t.Fatalf("case %d: chain %#x: frames %#x valid %v, want %#x valid %v", i, chain, got, gotValid, want, wantValid)
		}
		if !wantValid {
			invalid++
		}
		// A loop that stops early leaves the chain valid.
		valid := true
		for range callerOrder(chain, &valid) {
			break
		}
		if !valid && len(want) > 0 {
			t.Fatalf("case %d: stopping after a frame made the chain invalid", i)
		}
	}
	if invalid == 0 {
		t.Fatal("no chain had an unknown marker")
	}
}
