package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"path"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
)

// errExpected means the maps differ from the corpus's expected result.
var errExpected = errors.New("kernel maps differ from the corpus's expected/kernel-maps")

// runMaps implements "kbench maps DIR".
func runMaps(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("maps", flag.ContinueOnError)
	fs.SetOutput(stderr)
	impl := fs.String("impl", "btree", "implementation to print: btree, list or both (compared; the list is quadratic: slow on corpora of 10k+ maps)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: kbench maps [-impl btree|list|both] DIR")
		return errUsage
	}
	c, err := corpus.Load(fs.Arg(0))
	if err != nil {
		return err
	}
	impls := mapset.All
	if *impl != "both" {
		im, err := mapset.ByName(*impl)
		if err != nil {
			return err
		}
		impls = []mapset.Impl{im}
	}
	var digests []string
	for i, im := range impls {
		ms, err := c.KernelMaps(im)
		if err != nil {
			return err
		}
		if i == 0 {
			fmt.Fprint(stdout, ms.Canonical())
		}
		digests = append(digests, ms.Digest())
		fmt.Fprintf(stdout, "# impl=%s maps=%d sha256=%s\n", im.Name, ms.Len(), ms.Digest())
	}
	for _, d := range digests[1:] {
		if d != digests[0] {
			return errMismatch
		}
	}
	// A corpus may carry its expected result (expected/kernel-maps).
	want, err := iofs.ReadFile(c.FS, path.Join(c.Dir, "expected", "kernel-maps"))
	if err == nil {
		if index.Digest(string(want)) != digests[0] {
			fmt.Fprintf(stdout, "# expected/kernel-maps: DIFFERENT (sha256=%s)\n", index.Digest(string(want)))
			return errExpected
		}
		fmt.Fprintln(stdout, "# expected/kernel-maps: identical")
	}
	return nil
}
