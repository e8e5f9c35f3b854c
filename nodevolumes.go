package podkit

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// unmountPodVolumes unmounts what the kubelet mounted for pods under dir
// (tmpfs of memory-backed emptyDirs and of projected service account
// tokens): Shutdown stops every pod but the kubelet, stopped first, does
// not tear their volumes down; a resumed node mounts them again.
func unmountPodVolumes(dir string) error {
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return fmt.Errorf("listing mounts under %s: %w", dir, err)
	}
	// Deepest first: nested mounts before their parents.
	sort.Slice(infos, func(i, j int) bool { return len(infos[i].Mountpoint) > len(infos[j].Mountpoint) })
	var errs []error
	for _, m := range infos {
		if err := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", filepath.Clean(m.Mountpoint), err))
		}
	}
	return errors.Join(errs...)
}
