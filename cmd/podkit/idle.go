package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// An idle cluster's memory is what it keeps, not what it once needed.
// Once Ready, `podkit up` and `podkit demo` hand back what start-up used
// and dropped, and keep the heap trimmed while idle:
//
//   - the heap start-up freed (building the demo images, the OpenAPI
//     documents, the first lists): debug.FreeOSMemory, since Go's
//     scavenger returns such pages only over minutes;
//   - the binary's pages only start-up ran or read (package initialisers,
//     the OpenAPI and PKI builders, the bootstrap objects; about half of
//     the 60 MiB of code and read-only data resident at Ready):
//     MADV_PAGEOUT on its read-only mappings. They are clean file pages:
//     the kernel drops them, and what the running cluster uses faults back
//     in from the page cache (in measurements: 34 MiB back within 30 s of
//     idling, a few dozen major faults for the first pods after);
//   - the heap that periodic work (node status, leases, resyncs) leaves
//     behind between garbage collections: every trimInterval, when the
//     Go runtime's resident memory grew by more than trimSlack since the
//     last trim, the same FreeOSMemory (one collection of a heap of
//     ~20 MiB: milliseconds of CPU per interval at most).
//
// GOGC and GOMEMLIMIT stay at Go's defaults: a lower GOGC costs CPU under
// load, when the heap is busy anyway, and a fixed memory limit would make
// a large cluster collect constantly.
const (
	trimInterval = 30 * time.Second
	trimSlack    = 4 << 20
)

// idle runs the steps above: once at once, the trim until ctx ends.
func idle(ctx context.Context) {
	debug.FreeOSMemory()
	if n, err := pageOutBinary(); err != nil {
		slog.Debug("podkit: start-up code not released", "mappings", n, "err", err)
	}
	go trim(ctx, trimInterval, trimSlack, goResident, debug.FreeOSMemory)
}

// pageOutBinary asks the kernel to reclaim the resident pages of this
// executable's read-only mappings (code, read-only data); it returns how
// many mappings it advised. Best effort: kernels before 5.4 refuse.
func pageOutBinary() (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || fs[5] != exe || strings.Contains(fs[1], "w") {
			continue
		}
		lo, hi, _ := strings.Cut(fs[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return n, fmt.Errorf("/proc/self/maps: bad range %q", fs[0])
		}
		// The range is not Go memory: a raw madvise, no slice over it.
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_PAGEOUT); e != 0 {
			return n, fmt.Errorf("madvise(MADV_PAGEOUT) %s: %w", fs[0], e)
		}
		n++
	}
	return n, sc.Err()
}

// trim calls free every interval when resident grew by more than slack
// since the last call, until ctx ends.
func trim(ctx context.Context, interval time.Duration, slack uint64, resident func() uint64, free func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	base := resident()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if r := resident(); r > base+slack {
			free()
			base = resident()
		}
	}
}

// goResident is the memory the Go runtime has mapped and not returned to
// the kernel (heap, stacks, its own structures).
func goResident() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}
