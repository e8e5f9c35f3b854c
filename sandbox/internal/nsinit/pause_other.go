//go:build !amd64

package nsinit

// pauseELF returns nil: the tiny pause executable exists for amd64 only,
// elsewhere StartPause runs the Go pause.
func pauseELF() []byte { return nil }
