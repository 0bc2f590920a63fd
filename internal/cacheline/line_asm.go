//go:build amd64 || arm64

package cacheline

//go:noescape
func line(addr uintptr)
