package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	corev1 "k8s.io/api/core/v1"
)

// setupHostPath checks (or creates) a hostPath per its type; the volume is
// the host path itself.
func setupHostPath(src *corev1.HostPathVolumeSource) (string, error) {
	if src.Path == "" {
		return "", errors.New("hostPath path must not be empty")
	}
	t := corev1.HostPathUnset
	if src.Type != nil {
		t = *src.Type
	}
	if err := checkHostPath(src.Path, t); err != nil {
		return "", err
	}
	return src.Path, nil
}

// checkHostPath applies the kubelet's hostPath type checks, creating the
// path for DirectoryOrCreate (0755) and FileOrCreate (0644). The unset type
// skips the checks; a missing path is then created as a directory, as the
// kubelet and containerd together do.
func checkHostPath(p string, t corev1.HostPathType) error {
	switch t {
	case corev1.HostPathUnset:
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fmt.Errorf("create hostPath %s: %w", p, err)
			}
		}
		return nil
	case corev1.HostPathDirectoryOrCreate:
		if !exists(p) {
			// chmod: the documented mode must not depend on the umask.
			err := os.MkdirAll(p, 0o755)
			if err == nil {
				err = os.Chmod(p, 0o755)
			}
			if err != nil {
				return fmt.Errorf("create hostPath %s: %w", p, err)
			}
		}
		return hostPathIs(p, fs.ModeDir, "directory")
	case corev1.HostPathDirectory:
		return hostPathIs(p, fs.ModeDir, "directory")
	case corev1.HostPathFileOrCreate:
		if !exists(p) {
			f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			switch {
			case err == nil:
				err = f.Chmod(0o644)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return fmt.Errorf("create hostPath %s: %w", p, err)
				}
			case !errors.Is(err, fs.ErrExist):
				return fmt.Errorf("create hostPath %s: %w", p, err)
			}
		}
		return hostPathIs(p, 0, "file")
	case corev1.HostPathFile:
		return hostPathIs(p, 0, "file")
	case corev1.HostPathSocket:
		return hostPathIs(p, fs.ModeSocket, "socket file")
	case corev1.HostPathCharDev:
		return hostPathIs(p, fs.ModeDevice|fs.ModeCharDevice, "character device")
	case corev1.HostPathBlockDev:
		return hostPathIs(p, fs.ModeDevice, "block device")
	}
	return fmt.Errorf("%s is an invalid volume type", t)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// hostPathIs checks that p (following symlinks) has the file type want.
func hostPathIs(p string, want fs.FileMode, what string) error {
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Type() != want {
		return tagf(ErrHostPathType, "hostPath type check failed: %s is not a %s", p, what)
	}
	return nil
}
