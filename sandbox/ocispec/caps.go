package ocispec

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/podkit/podkit/sandbox"
)

// capNames lists the Linux capabilities by number (linux/capability.h).
var capNames = [...]string{
	"CAP_CHOWN",
	"CAP_DAC_OVERRIDE",
	"CAP_DAC_READ_SEARCH",
	"CAP_FOWNER",
	"CAP_FSETID",
	"CAP_KILL",
	"CAP_SETGID",
	"CAP_SETUID",
	"CAP_SETPCAP",
	"CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST",
	"CAP_NET_ADMIN",
	"CAP_NET_RAW",
	"CAP_IPC_LOCK",
	"CAP_IPC_OWNER",
	"CAP_SYS_MODULE",
	"CAP_SYS_RAWIO",
	"CAP_SYS_CHROOT",
	"CAP_SYS_PTRACE",
	"CAP_SYS_PACCT",
	"CAP_SYS_ADMIN",
	"CAP_SYS_BOOT",
	"CAP_SYS_NICE",
	"CAP_SYS_RESOURCE",
	"CAP_SYS_TIME",
	"CAP_SYS_TTY_CONFIG",
	"CAP_MKNOD",
	"CAP_LEASE",
	"CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL",
	"CAP_SETFCAP",
	"CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN",
	"CAP_SYSLOG",
	"CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND",
	"CAP_AUDIT_READ",
	"CAP_PERFMON",
	"CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

// DefaultCapabilities returns the capabilities containerd's CRI plugin
// gives an unprivileged container (the Docker set of 14), with the CAP_
// prefix, in containerd's order.
func DefaultCapabilities() []string {
	return []string{
		"CAP_CHOWN",
		"CAP_DAC_OVERRIDE",
		"CAP_FSETID",
		"CAP_FOWNER",
		"CAP_MKNOD",
		"CAP_NET_RAW",
		"CAP_SETGID",
		"CAP_SETUID",
		"CAP_SETFCAP",
		"CAP_SETPCAP",
		"CAP_NET_BIND_SERVICE",
		"CAP_SYS_CHROOT",
		"CAP_KILL",
		"CAP_AUDIT_WRITE",
	}
}

// KnownCapabilities returns every capability name this package knows,
// in kernel order (CAP_CHOWN is 0).
func KnownCapabilities() []string { return slices.Clone(capNames[:]) }

// CurrentCapabilities returns the capabilities in the calling process's
// effective set, in kernel order. It is what "ALL" and privileged mean
// by default, as in containerd: a container can never be given a
// capability its runtime does not hold, so "every capability" is every
// one the runtime has (hosts may withhold some, e.g. CAP_SYS_RESOURCE).
func CurrentCapabilities() ([]string, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, fmt.Errorf("read own capabilities: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "CapEff:")
		if !ok {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("parse CapEff %q in /proc/self/status: %w", v, err)
		}
		return capsFromMask(mask), nil
	}
	return nil, fmt.Errorf("no CapEff line in /proc/self/status")
}

// capsFromMask names the known capabilities set in mask.
func capsFromMask(mask uint64) []string {
	var caps []string
	for i, name := range capNames {
		if mask&(1<<uint(i)) != 0 {
			caps = append(caps, name)
		}
	}
	return caps
}

// normalizeCap returns the CAP_-prefixed upper-case name of c, or an
// error wrapping sandbox.ErrInvalid when the kernel has no such
// capability.
func normalizeCap(c string) (string, error) {
	name := strings.ToUpper(strings.TrimSpace(c))
	if !strings.HasPrefix(name, "CAP_") {
		name = "CAP_" + name
	}
	if !slices.Contains(capNames[:], name) {
		return "", fmt.Errorf("unknown capability %q: %w", c, sandbox.ErrInvalid)
	}
	return name, nil
}

// isAll reports whether c is the "ALL" keyword (any case).
func isAll(c string) bool { return strings.EqualFold(strings.TrimSpace(c), "ALL") }

// needsAll reports whether Capabilities needs the "ALL" set for sec.
func needsAll(sec sandbox.SecurityConfig) bool {
	return sec.Privileged || slices.ContainsFunc(sec.CapAdd, isAll)
}

// Capabilities computes a container's capability set the way containerd's
// CRI plugin does: DefaultCapabilities, then "ALL" in CapAdd replaces the
// set with all and "ALL" in CapDrop empties it, then the other added
// capabilities are appended and the other dropped ones removed. Names may
// carry the CAP_ prefix or not, in any case. A privileged container gets
// all, whatever it adds or drops. all is the set "ALL" stands for
// (CurrentCapabilities, normally); it is only read when needed. An
// unknown name is an error wrapping sandbox.ErrInvalid.
func Capabilities(sec sandbox.SecurityConfig, all []string) ([]string, error) {
	var add, drop []string
	addAll, dropAll := false, false
	for _, c := range sec.CapAdd {
		if isAll(c) {
			addAll = true
			continue
		}
		n, err := normalizeCap(c)
		if err != nil {
			return nil, fmt.Errorf("capabilities to add: %w", err)
		}
		add = append(add, n)
	}
	for _, c := range sec.CapDrop {
		if isAll(c) {
			dropAll = true
			continue
		}
		n, err := normalizeCap(c)
		if err != nil {
			return nil, fmt.Errorf("capabilities to drop: %w", err)
		}
		drop = append(drop, n)
	}
	if sec.Privileged {
		return append([]string{}, all...), nil
	}
	caps := DefaultCapabilities()
	if addAll {
		caps = slices.Clone(all)
	}
	if dropAll {
		caps = nil
	}
	for _, c := range add {
		if !slices.Contains(caps, c) {
			caps = append(caps, c)
		}
	}
	caps = slices.DeleteFunc(caps, func(c string) bool { return slices.Contains(drop, c) })
	if caps == nil {
		caps = []string{}
	}
	return caps, nil
}
