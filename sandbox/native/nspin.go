package native

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/cni/netns"
)

// nsKind is a namespace type the sandbox pins.
type nsKind struct {
	name string // as in /proc/<pid>/ns/<name>
	flag int    // CLONE_NEW*
}

var (
	ipcNS = nsKind{"ipc", unix.CLONE_NEWIPC}
	utsNS = nsKind{"uts", unix.CLONE_NEWUTS}
)

// pin creates a namespace of kind on a throwaway locked OS thread, runs
// setup inside it, and pins it by bind mounting the thread's namespace file
// onto path, so it outlives the thread. The thread is never returned to the
// Go scheduler: its namespaces differ from the process's.
func pin(path string, kind nsKind, setup func() error) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("pin %s namespace: %w", kind.name, err)
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		errc <- func() error {
			if err := unix.Unshare(kind.flag); err != nil {
				return fmt.Errorf("unshare %s: %w", kind.name, err)
			}
			if setup != nil {
				if err := setup(); err != nil {
					return err
				}
			}
			src := fmt.Sprintf("/proc/%d/task/%d/ns/%s", os.Getpid(), unix.Gettid(), kind.name)
			if err := unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("bind %s to %s: %w", src, path, err)
			}
			return nil
		}()
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return fmt.Errorf("pin %s namespace at %s: %w", kind.name, path, err)
	}
	return nil
}

// unpin removes a pinned namespace; a missing or unmounted pin is fine.
func unpin(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// sysctlPath turns net.ipv4.ip_forward into /proc/sys/net/ipv4/ip_forward.
func sysctlPath(name string) string {
	return "/proc/sys/" + strings.ReplaceAll(name, ".", "/")
}

// splitSysctls separates the namespaced sysctls a sandbox may set into
// those of its network namespace and those of its IPC namespace, as the
// kubelet's safe and unsafe sysctl lists do; anything else is rejected.
func splitSysctls(s map[string]string) (netSys, ipcSys map[string]string, err error) {
	netSys, ipcSys = map[string]string{}, map[string]string{}
	names := make([]string, 0, len(s))
	for k := range s {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		switch {
		case strings.HasPrefix(k, "net."):
			netSys[k] = s[k]
		case strings.HasPrefix(k, "kernel.shm"), strings.HasPrefix(k, "kernel.msg"),
			k == "kernel.sem", strings.HasPrefix(k, "fs.mqueue."):
			ipcSys[k] = s[k]
		default:
			return nil, nil, fmt.Errorf("sysctl %q is not namespaced", k)
		}
	}
	return netSys, ipcSys, nil
}

// writeSysctls writes sysctls from the current thread's namespaces.
func writeSysctls(s map[string]string) error {
	names := make([]string, 0, len(s))
	for k := range s {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := os.WriteFile(sysctlPath(k), []byte(s[k]), 0o644); err != nil {
			return fmt.Errorf("sysctl %s=%s: %w", k, s[k], err)
		}
	}
	return nil
}

// setNetSysctls writes network sysctls inside the pinned network namespace.
func setNetSysctls(nsPath string, s map[string]string) error {
	if len(s) == 0 {
		return nil
	}
	return netns.Do(nsPath, func() error { return writeSysctls(s) })
}

// shmDir mounts the sandbox's /dev/shm, a tmpfs its containers share.
func mountShm(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("shm dir: %w", err)
	}
	if err := unix.Mount("shm", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=65536k"); err != nil {
		return fmt.Errorf("mount shm at %s: %w", dir, err)
	}
	return nil
}

func unmountAll(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	return nil
}

// loopbackUp brings lo up in a network namespace the Networker did not
// configure (no Networker).
func loopbackUp(nsPath string) error {
	h, err := netns.HandleAt(nsPath)
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}

var _ = filepath.Join
