package nodestatus

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Host is the Machine of the running Linux host, read from /proc, /sys,
// /etc and statfs(2) of Root, as cAdvisor reads them for the kubelet.
// The directories are fields so tests can point them at a fake tree.
type Host struct {
	// Root is a directory on the filesystem of the node's state (the
	// kubelet's root dir): its size is ephemeral-storage and its free
	// space and inodes are the nodefs signals.
	Root string
	// Proc, Sys and Etc default to /proc, /sys and /etc.
	Proc, Sys, Etc string
}

var _ Machine = (*Host)(nil)

// HostMachine returns the host's Machine, with node state under root.
func HostMachine(root string) *Host {
	return &Host{Root: root, Proc: "/proc", Sys: "/sys", Etc: "/etc"}
}

// Capacity implements Machine.
func (h *Host) Capacity(ctx context.Context) (corev1.ResourceList, error) {
	mem, err := h.meminfo()
	if err != nil {
		return nil, err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(h.Root, &st); err != nil {
		return nil, fmt.Errorf("nodestatus: statfs %s: %w", h.Root, err)
	}
	rl := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(h.cpus()), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(mem["MemTotal"], resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(st.Blocks)*st.Bsize, resource.BinarySI),
	}
	pages, err := filepath.Glob(filepath.Join(h.Sys, "kernel/mm/hugepages/hugepages-*kB"))
	if err != nil {
		return nil, fmt.Errorf("nodestatus: hugepages: %w", err)
	}
	for _, dir := range pages {
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(dir), "hugepages-"), "kB"), 10, 64)
		if err != nil {
			continue
		}
		n, err := readInt(filepath.Join(dir, "nr_hugepages"))
		if err != nil {
			return nil, err
		}
		rl[hugePageResource(kb*1024)] = *resource.NewQuantity(n*kb*1024, resource.BinarySI)
	}
	return rl, nil
}

// hugePageResource names a page size's resource: hugepages-2Mi.
func hugePageResource(pageSize int64) corev1.ResourceName {
	return corev1.ResourceName(corev1.ResourceHugePagesPrefix + resource.NewQuantity(pageSize, resource.BinarySI).String())
}

// cpus counts the online CPUs (/sys/devices/system/cpu/online, e.g.
// "0-3,6"), falling back to the Go runtime's count.
func (h *Host) cpus() int {
	data, err := os.ReadFile(filepath.Join(h.Sys, "devices/system/cpu/online"))
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(data)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || b < a {
			return runtime.NumCPU()
		}
		n += b - a + 1
	}
	return n
}

// meminfo reads /proc/meminfo in bytes.
func (h *Host) meminfo() (map[string]int64, error) {
	path := filepath.Join(h.Proc, "meminfo")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("nodestatus: %w", err)
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			v *= 1024
		}
		out[key] = v
	}
	if _, ok := out["MemTotal"]; !ok {
		return nil, fmt.Errorf("nodestatus: %s has no MemTotal", path)
	}
	return out, nil
}

// SystemInfo implements Machine.
func (h *Host) SystemInfo(ctx context.Context) (SystemInfo, error) {
	var si SystemInfo
	si.MachineID = readTrimmed(filepath.Join(h.Etc, "machine-id"))
	si.SystemUUID = strings.ToLower(readTrimmed(filepath.Join(h.Sys, "class/dmi/id/product_uuid")))
	if si.SystemUUID == "" {
		si.SystemUUID = si.MachineID
	}
	si.BootID = readTrimmed(filepath.Join(h.Proc, "sys/kernel/random/boot_id"))
	si.KernelVersion = readTrimmed(filepath.Join(h.Proc, "sys/kernel/osrelease"))
	si.OSImage = osImage(filepath.Join(h.Etc, "os-release"))
	if si.BootID == "" || si.KernelVersion == "" {
		return si, fmt.Errorf("nodestatus: boot id or kernel version unreadable under %s", h.Proc)
	}
	return si, nil
}

// osImage is PRETTY_NAME of os-release, or "Linux".
func osImage(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "Linux"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
			if v = strings.Trim(v, `'"`); v != "" {
				return v
			}
		}
	}
	return "Linux"
}

// Signals implements Machine.
func (h *Host) Signals(ctx context.Context) (Signals, error) {
	var s Signals
	mem, err := h.meminfo()
	if err != nil {
		return s, err
	}
	s.MemoryCapacity, s.MemoryAvailable = mem["MemTotal"], mem["MemAvailable"]
	var st unix.Statfs_t
	if err := unix.Statfs(h.Root, &st); err != nil {
		return s, fmt.Errorf("nodestatus: statfs %s: %w", h.Root, err)
	}
	s.NodeFSCapacity, s.NodeFSAvailable = int64(st.Blocks)*st.Bsize, int64(st.Bavail)*st.Bsize
	s.NodeFSInodes, s.NodeFSInodesFree = int64(st.Files), int64(st.Ffree)
	pidMax, err := readInt(filepath.Join(h.Proc, "sys/kernel/pid_max"))
	if err != nil {
		return s, err
	}
	if threads, err := readInt(filepath.Join(h.Proc, "sys/kernel/threads-max")); err == nil && threads < pidMax {
		pidMax = threads
	}
	running, err := h.processes()
	if err != nil {
		return s, err
	}
	s.PIDsMax, s.PIDsAvailable = pidMax, max(pidMax-running, 0)
	return s, nil
}

// processes counts the host's tasks: the total after the slash in the
// fourth field of /proc/loadavg ("0.00 0.01 0.05 1/523 4242").
func (h *Host) processes() (int64, error) {
	path := filepath.Join(h.Proc, "loadavg")
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("nodestatus: %w", err)
	}
	f := strings.Fields(string(data))
	if len(f) >= 4 {
		if _, total, ok := strings.Cut(f[3], "/"); ok {
			if n, err := strconv.ParseInt(total, 10, 64); err == nil {
				return n, nil
			}
		}
	}
	return 0, fmt.Errorf("nodestatus: unexpected %s: %q", path, data)
}

func readTrimmed(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("nodestatus: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("nodestatus: %s: %w", path, err)
	}
	return n, nil
}
