package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/index/mapset"
)

// runMaps implements "kbench maps DIR".
func runMaps(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("maps", flag.ContinueOnError)
	fs.SetOutput(stderr)
	impl := fs.String("impl", "both", "implementation to print: btree, list or both (compared)")
	if err := fs.Parse(args); err != nil {
		return errUsage
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
	return nil
}
