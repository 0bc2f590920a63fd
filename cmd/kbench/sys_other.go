//go:build !linux

package main

// uname returns no release or machine: off Linux, the recordings kbench
// reads are never this machine's.
func uname() (release, machine string) { return "", "" }

// adviseHugePages does nothing: transparent huge pages are Linux's.
func adviseHugePages(b []byte) {}
