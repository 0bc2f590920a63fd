package main

import "os"

// removePartial closes f, the output file at path that a failed command
// wrote part of, and removes it if it is a regular file: -o /dev/null (or
// a pipe, or a terminal) must survive a bad recording, above all for
// root, for whom removing /dev/null succeeds.
func removePartial(f *os.File, path string) {
	fi, err := f.Stat()
	f.Close()
	if err == nil && fi.Mode().IsRegular() {
		os.Remove(path)
	}
}
