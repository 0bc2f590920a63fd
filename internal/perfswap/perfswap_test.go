package perfswap_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/kmapindex/kmapindex/internal/perfswap"
)

// The full check (every record decodes the same from both byte orders)
// is perfdata's TestByteSwapped; this one checks the header flip.
func TestHeader(t *testing.T) {
	le, err := os.ReadFile("../../ingest/perfdata/testdata/sleep.data")
	if err != nil {
		t.Fatal(err)
	}
	be := perfswap.ToBigEndian(le)
	if string(le[:8]) != "PERFILE2" || string(be[:8]) != "2ELIFREP" {
		t.Errorf("magic %q -> %q", le[:8], be[:8])
	}
	if len(be) != len(le) || bytes.Equal(be, le) {
		t.Error("copy has another length or is unchanged")
	}
	if le[0] != 'P' {
		t.Error("input modified")
	}
}
