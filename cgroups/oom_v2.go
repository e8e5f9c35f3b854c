package cgroups

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// watchOOMv2 follows memory.events with inotify and reports each increase
// of its oom_kill counter. It ends when ctx does, when the file goes away,
// or when a liveness check finds the cgroup gone.
func watchOOMv2(ctx context.Context, path, dir string, now func() time.Time, poll time.Duration) (<-chan OOMEvent, error) {
	file := filepath.Join(dir, "memory.events")
	last, err := readOOMKillV2(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", path, ErrNotFound)
		}
		return nil, fmt.Errorf("watch OOM of %s: %w", path, err)
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("watch OOM of %s: inotify: %w", path, err)
	}
	in := os.NewFile(uintptr(fd), "oom-inotify")
	if _, err := unix.InotifyAddWatch(fd, file, unix.IN_MODIFY|unix.IN_DELETE_SELF); err != nil {
		in.Close()
		return nil, fmt.Errorf("watch OOM of %s: watch %s: %w", path, file, err)
	}
	if poll <= 0 {
		poll = time.Second
	}
	// The reader goroutine turns inotify records into a signal; it ends
	// when the descriptor is closed.
	changed := make(chan bool, 1) // true: modified, false: gone
	go func() {
		defer close(changed)
		buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
		for {
			n, err := in.Read(buf)
			if err != nil {
				return
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				mask := binary.NativeEndian.Uint32(buf[off+4:])
				nameLen := binary.NativeEndian.Uint32(buf[off+12:])
				off += unix.SizeofInotifyEvent + int(nameLen)
				gone := mask&(unix.IN_DELETE_SELF|unix.IN_IGNORED) != 0
				select {
				case changed <- !gone:
				default: // a signal is already pending; it reads the latest state
				}
				if gone {
					return
				}
			}
		}
	}()
	out := make(chan OOMEvent, 16)
	go func() {
		defer close(out)
		defer in.Close()
		tick := time.NewTicker(poll)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := os.Stat(file); err != nil {
					return
				}
			case alive, ok := <-changed:
				if !ok || !alive {
					return
				}
				kills, err := readOOMKillV2(file)
				if err != nil {
					return
				}
				if kills > last {
					last = kills
					select {
					case out <- OOMEvent{Path: path, Time: now(), Kills: kills}:
					case <-ctx.Done():
						return
					}
				}
			}
		}
	}()
	return out, nil
}

func readOOMKillV2(file string) (uint64, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return kvValue(data, "oom_kill")
}
