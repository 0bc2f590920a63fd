package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/kmapindex/kmapindex/corpus/gen"
)

// runGen implements "kbench gen": generate a synthetic corpus.
func runGen(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var p gen.Params
	fs.StringVar(&p.Arch, "arch", "x86_64", "architecture: "+strings.Join(gen.Arches(), ", "))
	fs.IntVar(&p.Modules, "modules", 50, "kernel modules")
	fs.IntVar(&p.BPF, "bpf", 10, "BPF programs")
	fs.IntVar(&p.Procs, "procs", 20, "user processes")
	fs.Int64Var(&p.Samples, "samples", 10000, "samples in perf.data")
	fs.Uint64Var(&p.Seed, "seed", 1, "random seed: the same seed gives the same files")
	fs.BoolVar(&p.Callchains, "callchains", false, "record callchains")
	fs.IntVar(&p.KernelSymbols, "ksyms", 0, "kernel text symbols (0: 20000)")
	fs.IntVar(&p.Sections, "sections", 0, fmt.Sprintf("optional sections per module (0: 4, at most %d)", gen.MaxSections))
	fs.IntVar(&p.DSOs, "dsos", 0, "shared libraries per process (0: 4)")
	fs.Float64Var(&p.MissRate, "miss", 0, "share of samples in no map (0: 0.015, negative: none)")
	fs.BoolVar(&p.NoSysfs, "no-sysfs", false, "leave out sys/module and ko/ (kmodsec.data keeps the sections)")
	fs.StringVar(&p.Name, "name", "", "corpus name (default gen-ARCH-SEED)")
	out := fs.String("o", "", "output directory (must not exist or be empty)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: kbench gen [-arch A] [-modules M] [-bpf B] [-procs P] [-samples S] [-seed X] [-callchains] -o DIR")
		return errUsage
	}
	sum, err := gen.Generate(p, *out)
	if err != nil {
		return err
	}
	_, err = sum.WriteTo(stdout)
	return err
}
