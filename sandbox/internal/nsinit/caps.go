package nsinit

import (
	"errors"
	"fmt"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// capNames are the capabilities by number (linux/capability.h).
var capNames = [...]string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
	"CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP",
	"CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
	"CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD",
	"CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP",
	"CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

// capMask turns capability names ("CAP_NET_RAW"; the prefix and case are
// optional) into a bit mask.
func capMask(names []string) (uint64, error) {
	var m uint64
	for _, n := range names {
		u := strings.ToUpper(n)
		if !strings.HasPrefix(u, "CAP_") {
			u = "CAP_" + u
		}
		found := false
		for i, c := range capNames {
			if c == u {
				m |= 1 << i
				found = true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown capability %q", n)
		}
	}
	return m, nil
}

// lastCap returns the highest capability the kernel knows.
func lastCap() int {
	c := len(capNames) - 1
	if _, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err != nil {
		for c > 0 {
			c--
			if _, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err == nil {
				return c
			}
		}
		return c
	}
	for c < 63 {
		if _, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c+1), 0, 0, 0); err != nil {
			return c
		}
		c++
	}
	return c
}

// capSets is spec.Process.Capabilities as masks.
type capSets struct {
	bounding, effective, permitted, inheritable, ambient uint64
}

func parseCaps(c *specs.LinuxCapabilities) (capSets, error) {
	var s capSets
	var err error
	for _, f := range []struct {
		dst   *uint64
		names []string
	}{
		{&s.bounding, c.Bounding}, {&s.effective, c.Effective}, {&s.permitted, c.Permitted},
		{&s.inheritable, c.Inheritable}, {&s.ambient, c.Ambient},
	} {
		if *f.dst, err = capMask(f.names); err != nil {
			return s, err
		}
	}
	return s, nil
}

// dropBounding removes every capability not in keep from the bounding set
// (needs CAP_SETPCAP, so it runs before the others are dropped).
func dropBounding(keep uint64) error {
	last := lastCap()
	for c := 0; c <= last; c++ {
		if keep&(1<<c) != 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop %s from the bounding set: %w", capName(c), err)
		}
	}
	return nil
}

// setCaps sets the calling thread's effective, permitted and inheritable
// sets, then its ambient set.
func setCaps(s capSets) error {
	last := lastCap()
	known := uint64(1)<<(last+1) - 1
	if last >= 63 {
		known = ^uint64(0)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	for i := range data {
		shift := 32 * i
		data[i] = unix.CapUserData{
			Effective:   uint32((s.effective & known) >> shift),
			Permitted:   uint32((s.permitted & known) >> shift),
			Inheritable: uint32((s.inheritable & known) >> shift),
		}
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	for c := 0; c <= last; c++ {
		if s.ambient&(1<<c) == 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, uintptr(c), 0, 0); err != nil {
			return fmt.Errorf("raise ambient %s: %w", capName(c), err)
		}
	}
	return nil
}

func capName(c int) string {
	if c < len(capNames) {
		return capNames[c]
	}
	return fmt.Sprintf("capability %d", c)
}
