package volume

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
	// tsLayout names the timestamped data directories, as the kubelet does.
	tsLayout          = "..2006_01_02_15_04_05."
	maxFileNameLength = 255
	maxPathLength     = 4096
)

// file is one file of an atomically written volume.
type file struct {
	data []byte
	mode os.FileMode
	// uid, when set, owns the file (a token for the pod's single user);
	// gid, when set, is its group (the pod's fsGroup).
	uid, gid *int64
}

// writeAtomic projects payload into dir (which must exist) like the
// kubelet's AtomicWriter: the files go into a new timestamped directory,
// setPerms (optional) adjusts it, the ..data symlink is renamed over to it,
// the user-visible top-level symlinks are created or pruned, and the old
// timestamped directory is removed. Nothing is written when the current
// version already matches the payload. It reports whether it wrote.
func (m *Manager) writeAtomic(dir string, payload map[string]file, setPerms func(dir string) error) (bool, error) {
	clean, err := cleanPayload(payload)
	if err != nil {
		return false, err
	}
	dataPath := filepath.Join(dir, dataDirName)
	oldTs, err := os.Readlink(dataPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", dataPath, err)
	}
	var remove []string
	if oldTs != "" {
		oldDir := filepath.Join(dir, oldTs)
		if remove, err = stalePaths(clean, oldDir); err != nil {
			return false, err
		}
		if len(remove) == 0 && samePayload(clean, oldDir) {
			return false, nil
		}
	}

	tsDir, err := os.MkdirTemp(dir, m.now().UTC().Format(tsLayout))
	if err != nil {
		return false, fmt.Errorf("create data directory in %s: %w", dir, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tsDir)
		}
	}()
	// 0755 whatever the umask, so that any user can traverse the tree.
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return false, err
	}
	if err := writeFiles(tsDir, clean); err != nil {
		return false, err
	}
	if setPerms != nil {
		if err := setPerms(tsDir); err != nil {
			return false, err
		}
	}
	if err := createVisible(dir, clean); err != nil {
		return false, err
	}
	tmpLink := filepath.Join(dir, newDataDirName)
	if err := os.Remove(tmpLink); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return false, fmt.Errorf("create data symlink in %s: %w", dir, err)
	}
	if err := os.Rename(tmpLink, dataPath); err != nil {
		_ = os.Remove(tmpLink)
		return false, fmt.Errorf("swap data symlink in %s: %w", dir, err)
	}
	ok = true

	// The new version is live; what follows only tidies up.
	var errs []error
	for _, p := range remove {
		if !strings.Contains(p, "/") {
			if err := os.Remove(filepath.Join(dir, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	errs = append(errs, removeOldData(dir, filepath.Base(tsDir)))
	return true, errors.Join(errs...)
}

// cleanPayload validates the payload's paths and cleans them.
func cleanPayload(payload map[string]file) (map[string]file, error) {
	clean := make(map[string]file, len(payload))
	for p, f := range payload {
		if err := checkPayloadPath(p); err != nil {
			return nil, err
		}
		if f.mode&^os.ModePerm != 0 {
			return nil, fmt.Errorf("invalid mode %#o for %s: must be between 0 and 0777", uint32(f.mode), p)
		}
		clean[path.Clean(p)] = f
	}
	return clean, nil
}

// checkPayloadPath enforces the kubelet's rules for projected paths:
// relative, no ".." element, not starting with "..", bounded lengths.
func checkPayloadPath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case path.IsAbs(p):
		return fmt.Errorf("invalid path: must be relative path: %s", p)
	case len(p) > maxPathLength:
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", maxPathLength)
	}
	items := strings.Split(p, "/")
	for _, it := range items {
		if it == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", p)
		}
		if len(it) > maxFileNameLength {
			return fmt.Errorf("invalid path: filenames must be less than or equal to %d characters", maxFileNameLength)
		}
	}
	if strings.HasPrefix(items[0], "..") && len(items[0]) > 2 {
		return fmt.Errorf("invalid path: must not start with '..': %s", p)
	}
	return nil
}

// stalePaths lists the paths of the old version that the new payload does
// not have (neither as a file nor as a parent directory of one).
func stalePaths(payload map[string]file, oldDir string) ([]string, error) {
	keep := map[string]bool{}
	for p := range payload {
		for q := p; q != "." && q != "/"; q = path.Dir(q) {
			keep[q] = true
		}
	}
	var stale []string
	err := filepath.WalkDir(oldDir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(oldDir, p)
		if rel != "." && !keep[filepath.ToSlash(rel)] {
			stale = append(stale, filepath.ToSlash(rel))
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", oldDir, err)
	}
	return stale, nil
}

// samePayload reports whether oldDir already holds every file of the
// payload with the same content, mode and owner.
func samePayload(payload map[string]file, oldDir string) bool {
	for p, f := range payload {
		full := filepath.Join(oldDir, p)
		fi, err := os.Lstat(full)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != f.mode {
			return false
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok &&
			(f.uid != nil && int64(st.Uid) != *f.uid || f.gid != nil && int64(st.Gid) != *f.gid) {
			return false
		}
		data, err := os.ReadFile(full)
		if err != nil || !bytes.Equal(data, f.data) {
			return false
		}
	}
	return true
}

// writeFiles writes the payload into the fresh directory dir.
func writeFiles(dir string, payload map[string]file) error {
	for p, f := range payload {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("create directory for %s: %w", p, err)
		}
		if err := writeFile(full, f); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(full string, f file) error {
	fd, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", full, err)
	}
	_, err = fd.Write(f.data)
	if err == nil && (f.uid != nil || f.gid != nil) {
		err = fd.Chown(idOr(f.uid), idOr(f.gid))
	}
	if err == nil {
		// Explicit chmod: the mode must not depend on the umask.
		err = fd.Chmod(f.mode)
	}
	if cerr := fd.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", full, err)
	}
	return nil
}

// idOr is *id, or -1 (unchanged) when nil.
func idOr(id *int64) int {
	if id == nil {
		return -1
	}
	return int(*id)
}

// createVisible makes each top-level path of the payload a symlink through
// ..data, unless it already exists.
func createVisible(dir string, payload map[string]file) error {
	for p := range payload {
		top, _, _ := strings.Cut(p, "/")
		link := filepath.Join(dir, top)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(path.Join(dataDirName, top), link); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", link, err)
		}
	}
	return nil
}

// removeOldData removes every timestamped data directory except keep,
// including leftovers of interrupted writes.
func removeOldData(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		n := e.Name()
		if n == keep || n == dataDirName || !strings.HasPrefix(n, "..") || !e.IsDir() {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
