package nsinit

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelSigaction is the kernel's struct sigaction; only the handler (the
// first field on every architecture Go supports on Linux) is inspected.
type kernelSigaction struct {
	handler  uintptr
	flags    uintptr
	restorer uintptr
	mask     uint64
}

const sigIGN = 1

// resetSignals prepares the exec: signals ignored by the parent (execve
// keeps SIG_IGN, for example SIGHUP under nohup) get their default action
// back, and the thread's signal mask is emptied. Handled signals are reset
// by execve itself.
func resetSignals() {
	for sig := 1; sig <= 64; sig++ {
		if sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP) {
			continue
		}
		var old kernelSigaction
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
			continue
		}
		if old.handler == sigIGN {
			var dfl kernelSigaction
			unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
		}
	}
	var empty uint64
	unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&empty)), 0, 8, 0, 0)
}
