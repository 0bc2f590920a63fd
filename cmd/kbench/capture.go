package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/corpus/capture"
	"github.com/kmapindex/kmapindex/index/mapset"
)

const captureUsage = `usage: kbench capture -o DIR [-root ROOT]
	snapshot the running machine's kallsyms, modules, module sections and
	files, kcore headers and KMOD_SEC_MAP records into a new corpus
	directory; what cannot be captured is listed as notes
`

// runCapture implements "kbench capture -o DIR": it writes a corpus of
// the running machine (or of the tree below -root), prints what it wrote
// and what is missing, and checks the result by loading it and building
// its kernel maps. A corpus that captures but does not load is reported,
// not an error.
func runCapture(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("capture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "write the corpus to `DIR` (new, or an empty directory)")
	root := fs.String("root", "/", "read the kernel's files below `ROOT` (proc/, sys/, lib/modules/)")
	fs.Usage = func() { fmt.Fprint(stderr, captureUsage); fs.PrintDefaults() }
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	rep, err := capture.Run(capture.Options{Root: *root, Out: *out})
	if err != nil {
		return err
	}
	printCapture(stdout, rep)
	checkCapture(stdout, rep.Out)
	return nil
}

// printCapture prints a capture report: the files (sys/module and ko
// summed up), then the notes.
func printCapture(w io.Writer, rep *capture.Report) {
	fmt.Fprintf(w, "captured %s (kernel %s, %s) into %s\n", rep.Host, rep.Release, rep.Arch, rep.Out)
	type group struct {
		name         string
		files, bytes int64
	}
	var groups []*group
	byName := make(map[string]*group)
	for _, f := range rep.Files {
		name := f.Name
		switch {
		case strings.HasPrefix(name, "sys/"):
			name = "sys/module/*/sections/*"
		case strings.HasPrefix(name, "ko/"):
			name = "ko/*.ko"
		}
		g := byName[name]
		if g == nil {
			g = &group{name: name}
			byName[name] = g
			groups = append(groups, g)
		}
		g.files++
		g.bytes += f.Size
	}
	var total int64
	for _, g := range groups {
		total += g.bytes
		if g.files == 1 && !strings.Contains(g.name, "*") {
			fmt.Fprintf(w, "  %-24s %10d bytes\n", g.name, g.bytes)
		} else {
			fmt.Fprintf(w, "  %-24s %10d bytes in %d files\n", g.name, g.bytes, g.files)
		}
	}
	fmt.Fprintf(w, "  %-24s %10d bytes in %d files\n", "total", total, len(rep.Files))
	fmt.Fprintf(w, "contents: %d symbols, %d modules, sections of %d, %d module files, %d kcore segments, %d KMOD_SEC_MAP records\n",
		rep.Symbols, rep.Modules, rep.Sections, rep.KoFiles, rep.Segments, rep.Records)
	if len(rep.Notes) == 0 {
		fmt.Fprintln(w, "notes: none")
		return
	}
	fmt.Fprintf(w, "notes (%d):\n", len(rep.Notes))
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "  - %s\n", n)
	}
}

// checkCapture loads the corpus in dir and builds its kernel maps on the
// B-tree, printing what it finds; a failure is printed as a note.
func checkCapture(w io.Writer, dir string) {
	c, err := corpus.Load(dir)
	if err != nil {
		fmt.Fprintf(w, "check: note: the corpus does not load: %v\n", err)
		return
	}
	fmt.Fprintf(w, "check: loaded %d symbols, %d modules, %d kcore segments, %d BPF maps\n",
		len(c.Symbols), len(c.Modules), len(c.Segments), len(c.BPF))
	ms, err := c.KernelMaps(mapset.BTree)
	if err != nil {
		fmt.Fprintf(w, "check: note: no kernel maps: %v\n", err)
		return
	}
	fmt.Fprintf(w, "check: kernel maps (impl=%s): %d maps, sha256=%s\n", mapset.BTree.Name, ms.Len(), ms.Digest())
}
