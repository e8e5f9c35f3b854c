package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// setupEmptyDir creates an emptyDir: a 0777 directory on the node's disk,
// or a tmpfs (of size sizeLimit) for medium Memory.
func (m *Manager) setupEmptyDir(pod *corev1.Pod, name string, src *corev1.EmptyDirVolumeSource) (string, error) {
	var memory bool
	var size int64
	switch src.Medium {
	case corev1.StorageMediumDefault:
	case corev1.StorageMediumMemory:
		memory = true
		if src.SizeLimit != nil {
			size = src.SizeLimit.Value()
		}
	default:
		return "", tagf(ErrUnsupported, "unsupported emptyDir medium %q", src.Medium)
	}
	dir := m.volumeDir(pod.UID, PluginEmptyDir, name)
	created, err := m.prepareDir(dir, memory, size)
	if err != nil {
		return "", err
	}
	// Ownership is applied once, when the volume is new, as the kubelet
	// does; later syncs must not walk a volume the pod writes to.
	if gid := fsGroup(pod); created && gid != nil {
		if err := ownDir(dir, *gid, false); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// prepareDir makes dir a 0777 directory and, for memory, mounts a tmpfs on
// it unless one is there. created reports that the directory or the tmpfs
// is new.
func (m *Manager) prepareDir(dir string, memory bool, size int64) (created bool, err error) {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, emptyDirPerm); err != nil {
			return false, fmt.Errorf("create %s: %w", dir, err)
		}
		created = true
	case err != nil:
		return false, err
	case !fi.IsDir():
		return false, fmt.Errorf("%s exists and is not a directory", dir)
	}
	if created || fi.Mode().Perm() != emptyDirPerm {
		// chmod: the mode must not depend on the umask.
		if err := os.Chmod(dir, emptyDirPerm); err != nil {
			return false, err
		}
	}
	if !memory {
		return created, nil
	}
	mounted, err := m.mnt.isMountPoint(dir)
	if err != nil {
		return false, fmt.Errorf("check mount %s: %w", dir, err)
	}
	if mounted {
		return created, nil
	}
	if err := m.mnt.mountTmpfs(dir, size); err != nil {
		return false, err
	}
	return true, nil
}

// writeVolume prepares the directory of an atomically written volume (on
// tmpfs when memory) and writes payload into it, applying the pod's fsGroup
// and fsUser.
func (m *Manager) writeVolume(pod *corev1.Pod, dir string, memory bool, payload map[string]file) error {
	created, err := m.prepareDir(dir, memory, 0)
	if err != nil {
		return err
	}
	gid := fsGroup(pod)
	var setPerms func(string) error
	if gid != nil {
		if created {
			if err := ownDir(dir, *gid, true); err != nil {
				return err
			}
		}
		for p, f := range payload {
			f.mode |= roMask
			f.gid = gid
			payload[p] = f
		}
		setPerms = func(ts string) error { return ownDirs(ts, *gid, true) }
	}
	wrote, err := m.writeAtomic(dir, payload, setPerms)
	if wrote {
		m.log.Debug("volume contents updated", "pod", podName(pod), "dir", dir)
	}
	return err
}

// Usage returns the bytes used by each emptyDir volume of the pod (on disk
// or in memory), counting allocated blocks as du does and each hard-linked
// inode once, without crossing into other mounts. It is what enforcing
// sizeLimit by eviction needs.
func (m *Manager) Usage(podUID types.UID) (map[string]int64, error) {
	if err := checkName(string(podUID)); err != nil {
		return nil, fmt.Errorf("volume: invalid pod UID: %w", err)
	}
	base := filepath.Join(m.podDir(podUID), volumesDirName, PluginEmptyDir)
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	usage := make(map[string]int64, len(entries))
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n, err := diskUsage(filepath.Join(base, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("usage of emptyDir %q: %w", e.Name(), err)
		}
		usage[e.Name()] = n
	}
	return usage, nil
}

func diskUsage(root string) (int64, error) {
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var rootDev uint64
	var total int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if p == root {
			rootDev = st.Dev
		} else if st.Dev != rootDev {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		id := inode{st.Dev, st.Ino}
		if !seen[id] {
			seen[id] = true
			total += st.Blocks * 512
		}
		return nil
	})
	return total, err
}
