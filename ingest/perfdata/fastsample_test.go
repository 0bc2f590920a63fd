package perfdata

import (
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"testing"
)

// The fast SAMPLE decoder agrees with the general one on random sample
// types and bodies (short ones included): whenever it decodes, the
// general decoder succeeds with the same Sample.
func TestDecodeSampleFastDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	r := &Reader{bo: binary.LittleEndian}
	fields := []SampleFormat{SampleFormatIdentifier, SampleFormatIP, SampleFormatTID, SampleFormatTime, SampleFormatAddr,
		SampleFormatID, SampleFormatStreamID, SampleFormatCPU, SampleFormatPeriod, SampleFormatCallchain, SampleFormatRead}
	fast := 0
	for range 20000 {
		var st SampleFormat
		for _, f := range fields {
			if rng.IntN(2) == 0 {
				st |= f
			}
		}
		// The body 8-byte aligned (the callchain a view of it) or not
		// (copied).
		n, off := 8*rng.IntN(16), 4*rng.IntN(2)
		body := make([]byte, n+off)[off:]
		for i := range body {
			body[i] = byte(rng.IntN(256))
		}
		if st&SampleFormatCallchain != 0 && len(body) >= 8 && rng.IntN(4) != 0 {
			// A plausible callchain length at a random field position.
			p := 8 * rng.IntN(len(body)/8)
			binary.LittleEndian.PutUint64(body[p:], uint64(rng.IntN(6)))
		}
		a := &Attr{SampleType: st}
		var got, want Sample
		var buf []uint64
		if l := newSampleLayout(st); !decodeSampleFast(body, &l, &got, &buf) {
			continue
		}
		fast++
		if err := r.decodeSampleBody(body, 0, a, &want); err != nil {
			t.Fatalf("type %#x body %x: fast decoded, general failed: %v", st, body, err)
		}
		if len(got.Callchain) == 0 && len(want.Callchain) == 0 {
			got.Callchain, want.Callchain = nil, nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("type %#x body %x:\nfast    %+v\ngeneral %+v", st, body, got, want)
		}
	}
	if fast < 1000 {
		t.Fatalf("only %d bodies took the fast path", fast)
	}
}
