package ocispec

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/sandbox"
)

// Real-time signal bounds as the C library (and Docker, containerd,
// systemd) number them: glibc keeps 32 and 33 for itself.
const (
	sigRTMIN = 34
	sigRTMAX = 64
)

// signalAliases are names the kernel headers define as synonyms.
var signalAliases = map[string]syscall.Signal{
	"IOT":  unix.SIGABRT,
	"POLL": unix.SIGIO,
	"CLD":  unix.SIGCHLD,
}

// ParseSignal parses an image's StopSignal: a name with or without the
// SIG prefix in any case ("SIGTERM", "term"), a number ("15"), or a
// real-time signal ("SIGRTMIN", "RTMIN+3", "SIGRTMAX-1"). Empty means
// SIGTERM. Anything else is an error wrapping sandbox.ErrInvalid.
func ParseSignal(s string) (syscall.Signal, error) {
	if s == "" {
		return unix.SIGTERM, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > sigRTMAX {
			return 0, fmt.Errorf("signal %q out of range 1-%d: %w", s, sigRTMAX, sandbox.ErrInvalid)
		}
		return syscall.Signal(n), nil
	}
	name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	if sig, ok := signalAliases[name]; ok {
		return sig, nil
	}
	if sig, ok := parseRealtime(name); ok {
		return sig, nil
	}
	if sig := unix.SignalNum("SIG" + name); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q: %w", s, sandbox.ErrInvalid)
}

// parseRealtime parses RTMIN, RTMIN+n, RTMAX and RTMAX-n.
func parseRealtime(name string) (syscall.Signal, bool) {
	var base, sign int
	var rest string
	switch {
	case strings.HasPrefix(name, "RTMIN"):
		base, sign, rest = sigRTMIN, 1, name[len("RTMIN"):]
	case strings.HasPrefix(name, "RTMAX"):
		base, sign, rest = sigRTMAX, -1, name[len("RTMAX"):]
	default:
		return 0, false
	}
	if rest == "" {
		return syscall.Signal(base), true
	}
	op := "+"
	if sign < 0 {
		op = "-"
	}
	digits, ok := strings.CutPrefix(rest, op)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 8)
	if err != nil {
		return 0, false
	}
	sig := base + sign*int(n)
	if sig < sigRTMIN || sig > sigRTMAX {
		return 0, false
	}
	return syscall.Signal(sig), true
}
