package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

// maxUnmountPasses bounds the unmount loop (stacked mounts need a pass
// each).
const maxUnmountPasses = 8

// Teardown unmounts every mount below the pod's volumes and volume-subpaths
// directories (tmpfs volumes, subPath bind mounts), checks that none is
// left, and only then removes both directories; a hostPath reached through a
// subPath bind mount is therefore never deleted. Cached tokens of the pod are
// dropped when the TokenSource is a Forgetter. It is idempotent. The pod's
// directory itself belongs to the kubelet and is left in place.
func (m *Manager) Teardown(ctx context.Context, podUID types.UID) error {
	if err := checkName(string(podUID)); err != nil {
		return fmt.Errorf("volume: invalid pod UID: %w", err)
	}
	unlock := m.lock(podUID)
	defer unlock()

	podDir := m.podDir(podUID)
	dirs := []string{filepath.Join(podDir, subPathsDirName), filepath.Join(podDir, volumesDirName)}
	for _, d := range dirs {
		if err := m.unmountAll(ctx, d); err != nil {
			return fmt.Errorf("tear down volumes of pod %s: %w", podUID, err)
		}
	}
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("tear down volumes of pod %s: %w", podUID, err)
		}
	}
	if f, ok := m.tokens.(Forgetter); ok {
		f.Forget(podUID)
	}
	m.log.Debug("volumes torn down", "podUID", podUID)
	return nil
}

// unmountAll unmounts everything at or below dir, deepest first, until
// mountinfo shows nothing left.
func (m *Manager) unmountAll(ctx context.Context, dir string) error {
	var left []string
	for range maxUnmountPasses {
		points, err := m.mnt.mountsUnder(dir)
		if err != nil {
			return err
		}
		if len(points) == 0 {
			return nil
		}
		left = points
		for _, p := range points {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := m.mnt.unmount(p); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("mounts remain below %s: %v", dir, left)
}
