package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/internal/procstat"
)

// procStatusInt reads an integer field of /proc/<pid>/status (-1 when
// missing).
func procStatusInt(pid int, key string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && k == key {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return -1
}

func procExe(pid int) string {
	p, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return "? (" + err.Error() + ")"
	}
	return p
}

func procComm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// cgroupProcs lists the processes in pid's memory cgroup (v1), or its
// cgroup2 cgroup on a unified host.
func cgroupProcs(pid int) ([]int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return nil, err
	}
	dir := ""
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case strings.Contains(","+parts[1]+",", ",memory,"):
			dir = filepath.Join("/sys/fs/cgroup/memory", parts[2])
		case parts[0] == "0" && dir == "" && !isHybrid():
			dir = filepath.Join("/sys/fs/cgroup", parts[2])
		}
	}
	if dir == "" {
		return nil, fmt.Errorf("no memory cgroup for %d", pid)
	}
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids, nil
}

func isHybrid() bool {
	_, err := os.Stat("/sys/fs/cgroup/unified")
	return err == nil
}

// loadavg is the three averages of /proc/loadavg.
func loadavg() string {
	l, err := procstat.ReadLoadAvg()
	if err != nil {
		return "?"
	}
	return l.String()
}

// machine describes the host for the report.
func machine() string {
	var u unix.Utsname
	kernel := "?"
	if unix.Uname(&u) == nil {
		kernel = unix.ByteSliceToString(u.Release[:])
	}
	distro := "?"
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				distro = strings.Trim(v, `"`)
			}
		}
	}
	cpu := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, Linux %s, %d CPUs (%s), %s", distro, kernel, runtime.NumCPU(), cpu, runtime.Version())
}

// fsType names the filesystem type holding path, from the mount table.
func fsType(path string) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "?"
	}
	best, typ := "", "?"
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if len(f) < 5 || sep < 0 || sep+1 >= len(f) {
			continue
		}
		mp := f[4]
		if (path == mp || strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			best, typ = mp, f[sep+1]
		}
	}
	return typ
}
