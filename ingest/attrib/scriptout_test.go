package attrib

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// scriptOut writes what appendScriptLine would have, in order, across
// batches, with dropped lines left out, whether a line's names are the
// strings seen before or new copies of them.
func TestScriptOutMatchesDirectFormatting(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	syms := []string{"main", "f", "[unknown]", "g (inlined)", ""}
	dsos := []string{"/bin/app", "[kernel.kallsyms]", "[unknown]", "inlined"}
	var got, want bytes.Buffer
	out := newScriptOut(&got)
	for range 20000 {
		at := out.mark()
		var sample []byte
		for range rng.IntN(12) {
			if rng.IntN(8) == 0 {
				out.blank()
				sample = append(sample, '\n')
				continue
			}
			sym, dso := syms[rng.IntN(len(syms))], dsos[rng.IntN(len(dsos))]
			if rng.IntN(3) == 0 {
				sym = strings.Clone(sym) // the same name in other memory
			}
			lead := " \t"[rng.IntN(2)]
			addr := rng.Uint64() >> rng.IntN(64)
			out.add(lead, addr, sym, dso)
			sample = appendScriptLine(sample, lead, addr, sym, dso)
		}
		if rng.IntN(10) == 0 {
			out.drop(at)
			sample = nil
		}
		want.Write(sample)
		if err := out.endSample(); err != nil {
			t.Fatal(err)
		}
	}
	if err := out.close(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("scriptOut wrote %d bytes, direct formatting %d; first difference at %d", got.Len(), want.Len(), firstDiff(got.String(), want.String()))
	}
	if got.Len() < 1<<20 {
		t.Fatalf("only %d bytes: too few batches", got.Len())
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// A write error reaches the attributor at a later batch, and close
// returns it.
func TestScriptOutWriteError(t *testing.T) {
	out := newScriptOut(&failingWriter{n: 1000})
	var err error
	for i := 0; i < 100*batchLines && err == nil; i++ {
		out.add(' ', uint64(i), fmt.Sprint("f", i%10), "/bin/app")
		err = out.endSample()
	}
	if err == nil || err.Error() != "disk full" {
		t.Errorf("endSample: %v, want the write error", err)
	}
	if err := out.close(); err == nil || err.Error() != "disk full" {
		t.Errorf("close: %v, want the write error", err)
	}
}

// Every pair's number names that pair, whatever the cache holds: many
// pairs share its slots, and one name comes with many others.
func TestScriptNamesNumbers(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	syms := make([]string, 3000)
	for i := range syms {
		syms[i] = fmt.Sprint("sym", i)
	}
	// Names cut from one text, as a symbol table's are: some start at
	// the same byte.
	text := strings.Repeat("abcdefghij", 10)
	for i := 1; i < len(text); i++ {
		syms = append(syms, text[:i], text[i%7:i])
	}
	dsos := []string{"/bin/a", "/bin/b", "[kernel.kallsyms]", "[unknown]"}
	var sn scriptNames
	number := map[namePair]uint32{}
	for range 200000 {
		sym, dso := syms[rng.IntN(len(syms))], dsos[rng.IntN(len(dsos))]
		if rng.IntN(4) == 0 {
			sym = strings.Clone(sym)
		}
		id := sn.pair(sym, dso)
		if p := sn.chunks[id/pairChunk][id%pairChunk]; p.sym != sym || p.dso != dso {
			t.Fatalf("(%s, %s) numbered %d, which is (%s, %s)", sym, dso, id, p.sym, p.dso)
		}
		k := namePair{sym, dso}
		if n, ok := number[k]; ok && n != id {
			t.Fatalf("(%s, %s) numbered %d, then %d", sym, dso, n, id)
		}
		number[k] = id
	}
	if int(sn.n) != len(number) {
		t.Errorf("%d numbers for %d pairs", sn.n, len(number))
	}
}
