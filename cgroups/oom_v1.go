package cgroups

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// watchOOMv1 registers an eventfd for memory.oom_control through
// cgroup.event_control. The kernel signals it when the cgroup hits its
// limit and the OOM killer runs, and once more when the cgroup is removed,
// which ends the watch.
func watchOOMv1(ctx context.Context, path, dir string, now func() time.Time) (<-chan OOMEvent, error) {
	ctl, err := os.Open(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", path, ErrNotFound)
		}
		return nil, fmt.Errorf("watch OOM of %s: %w", path, err)
	}
	defer ctl.Close()
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("watch OOM of %s: eventfd: %w", path, err)
	}
	ev := os.NewFile(uintptr(efd), "oom-eventfd") // non-blocking: served by the poller
	reg := fmt.Sprintf("%d %d", efd, ctl.Fd())
	if err := os.WriteFile(filepath.Join(dir, "cgroup.event_control"), []byte(reg), 0); err != nil {
		ev.Close()
		return nil, fmt.Errorf("watch OOM of %s: register: %w", path, err)
	}
	out := make(chan OOMEvent, 16)
	stop := context.AfterFunc(ctx, func() { ev.Close() })
	go func() {
		defer close(out)
		defer stop()
		defer ev.Close()
		buf := make([]byte, 8)
		for {
			if _, err := ev.Read(buf); err != nil {
				return // closed by ctx, or broken
			}
			kills, err := readOOMKillV1(dir)
			if err != nil {
				return // the cgroup is gone: its removal signalled us
			}
			select {
			case out <- OOMEvent{Path: path, Time: now(), Kills: kills}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// readOOMKillV1 reads oom_kill from memory.oom_control.
func readOOMKillV1(dir string) (uint64, error) {
	data, err := os.ReadFile(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		return 0, err
	}
	return kvValue(data, "oom_kill")
}

// kvValue finds "key value" in a flat-keyed cgroup file.
func kvValue(data []byte, key string) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte(" "))
		if ok && string(k) == key {
			return strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	return 0, nil
}
