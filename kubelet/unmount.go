package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

// VolumeUnmounter is what a Volumes stage may also implement
// (*volume.Manager does): unmount the volumes of every pod of the node
// without removing them, as a reboot would.
type VolumeUnmounter interface {
	UnmountAll(ctx context.Context) error
}

// UnmountVolumes releases the mounts of every pod's volumes, for a node
// that shuts down with its pods stopped (podkit.Node.Shutdown, after their
// sandboxes are removed). Run leaves them mounted on purpose: containers
// keep running when the kubelet stops, for the next kubelet to adopt, and
// they use them. With a VolumeUnmounter the volumes stay on the node's disk
// for the pods' next run; any other Volumes stage has every pod's volumes
// torn down. Call it only after Run returned: a pod sync still running
// would mount them again.
func (k *Kubelet) UnmountVolumes(ctx context.Context) error {
	if u, ok := k.volumes.(VolumeUnmounter); ok {
		if err := u.UnmountAll(ctx); err != nil {
			return fmt.Errorf("unmounting pod volumes: %w", err)
		}
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(k.cfg.RootDir, "pods"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing pod directories: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			errs = append(errs, k.volumes.Teardown(ctx, types.UID(e.Name())))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tearing down pod volumes: %w", err)
	}
	return nil
}
