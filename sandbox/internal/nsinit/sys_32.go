//go:build linux && (386 || arm)

package nsinit

import "golang.org/x/sys/unix"

// Per-thread credential syscalls with 32-bit ids.
const (
	sysSetresuid = unix.SYS_SETRESUID32
	sysSetresgid = unix.SYS_SETRESGID32
)
