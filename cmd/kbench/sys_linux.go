package main

import "golang.org/x/sys/unix"

// uname returns the kernel release and machine (uname -r, uname -m).
func uname() (release, machine string) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", ""
	}
	return unix.ByteSliceToString(u.Release[:]), unix.ByteSliceToString(u.Machine[:])
}

// adviseHugePages advises transparent huge pages for b, best effort.
func adviseHugePages(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }
