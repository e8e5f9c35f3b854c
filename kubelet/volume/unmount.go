package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

// Unmount unmounts every mount below the pod's volumes and volume-subpaths
// directories (the tmpfs of secret, projected and memory emptyDir volumes,
// the subPath bind mounts) without removing the pod's volumes: it is for a
// pod that stops but is not gone, because its node shuts down. What the
// node's disk holds stays, as across a reboot: emptyDir contents on disk,
// configMap and downwardAPI files. What lived in memory is gone, secrets and
// tokens included, and the subPath mount points are removed once nothing is
// mounted on them. When the pod runs again, Setup mounts fresh tmpfs and
// writes their contents anew and Mounts binds the subPaths again. Teardown,
// not Unmount, is what removes a pod's volumes. It is idempotent.
func (m *Manager) Unmount(ctx context.Context, podUID types.UID) error {
	if err := checkName(string(podUID)); err != nil {
		return fmt.Errorf("volume: invalid pod UID: %w", err)
	}
	unlock := m.lock(podUID)
	defer unlock()

	podDir := m.podDir(podUID)
	subPaths := filepath.Join(podDir, subPathsDirName)
	for _, d := range []string{subPaths, filepath.Join(podDir, volumesDirName)} {
		if err := m.unmountAll(ctx, d); err != nil {
			return fmt.Errorf("unmount volumes of pod %s: %w", podUID, err)
		}
	}
	// Only mount points live there, and nothing is mounted any more.
	if err := os.RemoveAll(subPaths); err != nil {
		return fmt.Errorf("unmount volumes of pod %s: %w", podUID, err)
	}
	m.log.Debug("volumes unmounted", "podUID", podUID)
	return nil
}

// UnmountAll calls Unmount for every pod that has a directory in PodsDir:
// what a node that shuts down with its pods stopped calls last, so that it
// leaves no mount behind. The caller makes sure nothing calls Setup or
// Mounts meanwhile (the kubelet has stopped), or they would mount again.
func (m *Manager) UnmountAll(ctx context.Context) error {
	entries, err := os.ReadDir(m.podsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("volume: list pods: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || checkName(e.Name()) != nil {
			continue
		}
		errs = append(errs, m.Unmount(ctx, types.UID(e.Name())))
	}
	return errors.Join(errs...)
}
