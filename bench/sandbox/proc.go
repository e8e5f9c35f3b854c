package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// procMem is a process's memory from /proc/<pid>/smaps_rollup, in bytes.
type procMem struct {
	RSS, PSS, PrivateDirty, PrivateClean, SharedClean uint64
}

func readProcMem(pid int) (procMem, error) {
	var m procMem
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return m, fmt.Errorf("memory of %d: %w", pid, err)
	}
	defer f.Close()
	fields := map[string]*uint64{
		"Rss:": &m.RSS, "Pss:": &m.PSS, "Private_Dirty:": &m.PrivateDirty,
		"Private_Clean:": &m.PrivateClean, "Shared_Clean:": &m.SharedClean,
	}
	s := bufio.NewScanner(f)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 2 {
			continue
		}
		if dst, ok := fields[f[0]]; ok {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return m, fmt.Errorf("memory of %d: %q: %w", pid, s.Text(), err)
			}
			*dst = kb * 1024
		}
	}
	if err := s.Err(); err != nil {
		return m, fmt.Errorf("memory of %d: %w", pid, err)
	}
	if m.RSS == 0 {
		return m, fmt.Errorf("memory of %d: no Rss in smaps_rollup", pid)
	}
	return m, nil
}

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

// childrenOf lists the processes whose parent is ppid.
func childrenOf(ppid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The command name may hold spaces and parentheses: the fields
		// after the last ')' are state, ppid, ...
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(ppid) {
			out = append(out, pid)
		}
	}
	return out, nil
}

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
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
