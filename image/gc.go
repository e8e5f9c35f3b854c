package image

import (
	"context"
	"fmt"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// GCPolicy is the kubelet's image garbage collection policy: when the
// image filesystem is more than HighThresholdPercent full, unused images
// are removed, least recently used first, until it is below
// LowThresholdPercent. Images used within MinAge are kept.
type GCPolicy struct {
	HighThresholdPercent int
	LowThresholdPercent  int
	MinAge               time.Duration
	// DiskStats reports the image filesystem's capacity and available
	// bytes (default: statfs of the store root).
	DiskStats func() (capacity, available int64, err error)
}

// GCResult reports what a collection removed.
type GCResult struct {
	Removed []string // image IDs
	Freed   int64    // bytes, by image size
}

// GarbageCollect applies p. inUse reports images that containers use; it
// and pinned images are never removed.
func (s *Service) GarbageCollect(ctx context.Context, p GCPolicy, inUse func(*Image) bool) (GCResult, error) {
	var res GCResult
	if p.HighThresholdPercent <= 0 || p.HighThresholdPercent > 100 || p.LowThresholdPercent < 0 || p.LowThresholdPercent > p.HighThresholdPercent {
		return res, fmt.Errorf("thresholds high %d%%, low %d%%: %w", p.HighThresholdPercent, p.LowThresholdPercent, ErrInvalidConfig)
	}
	stats := p.DiskStats
	if stats == nil {
		stats = func() (int64, int64, error) { return statfs(s.cfg.Root) }
	}
	capacity, available, err := stats()
	if err != nil {
		return res, fmt.Errorf("image filesystem usage: %w", err)
	}
	if capacity <= 0 {
		return res, nil
	}
	usage := 100 - available*100/capacity
	if usage < int64(p.HighThresholdPercent) {
		return res, nil
	}
	toFree := capacity*int64(100-p.LowThresholdPercent)/100 - available
	images, err := s.List(ctx)
	if err != nil {
		return res, err
	}
	sort.SliceStable(images, func(i, j int) bool { return images[i].LastUsed.Before(images[j].LastUsed) })
	now := s.cfg.Now()
	for _, img := range images {
		if res.Freed >= toFree {
			break
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if img.Pinned || (inUse != nil && inUse(img)) || now.Sub(img.LastUsed) < p.MinAge {
			continue
		}
		if err := s.Remove(ctx, img.ID); err != nil {
			return res, fmt.Errorf("removing image %s: %w", img.ID, err)
		}
		res.Removed = append(res.Removed, img.ID)
		res.Freed += img.Size
	}
	return res, nil
}

func statfs(path string) (capacity, available int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize, nil
}
