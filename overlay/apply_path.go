package overlay

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// procPath names the file base in the directory open as fd, so that
// path-based calls resolve through the descriptor and never through a
// symbolic link in the directory's own path.
func procPath(fd int, base string) string {
	p := "/proc/self/fd/" + strconv.Itoa(fd)
	if base != "" {
		p += "/" + base
	}
	return p
}

func isWhiteout(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

func isDir(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

const dirOpenFlags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_DIRECTORY | unix.O_CLOEXEC

// openDir opens the directory rel (relative to the layer root) one
// component at a time, never following a symbolic link. With create,
// missing directories are made, taking their metadata from the lower
// layers when they have the directory.
func (a *applier) openDir(rel string, create bool) (int, error) {
	fd, err := unix.Openat(a.root, ".", dirOpenFlags, 0)
	if err != nil {
		return -1, fmt.Errorf("opening layer root: %w", err)
	}
	if rel == "" {
		return fd, nil
	}
	comps := strings.Split(rel, "/")
	for i, c := range comps {
		nfd, err := unix.Openat(fd, c, dirOpenFlags, 0)
		if err != nil {
			prefix := strings.Join(comps[:i+1], "/")
			if err = a.fixDir(fd, c, prefix, err, create); err == nil {
				nfd, err = unix.Openat(fd, c, dirOpenFlags, 0)
			}
			if err != nil {
				unix.Close(fd)
				return -1, fmt.Errorf("opening %q: %w", prefix, err)
			}
		}
		unix.Close(fd)
		fd = nfd
	}
	return fd, nil
}

// fixDir handles a component of a parent path that could not be opened as
// a directory: it is missing (made when create), a whiteout (replaced by an
// opaque directory when create), a symbolic link (unsafe) or a file.
func (a *applier) fixDir(pfd int, name, rel string, openErr error, create bool) error {
	if errors.Is(openErr, unix.ENOENT) {
		if !create {
			return openErr
		}
		return a.mkdirImplicit(pfd, name, rel, false)
	}
	if !errors.Is(openErr, unix.ENOTDIR) && !errors.Is(openErr, unix.ELOOP) {
		return openErr
	}
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fmt.Errorf("parent %q is a symbolic link: %w", rel, ErrUnsafePath)
	case isWhiteout(&st) && create:
		if err := unix.Unlinkat(pfd, name, 0); err != nil {
			return err
		}
		return a.mkdirImplicit(pfd, name, rel, true)
	case isWhiteout(&st):
		return unix.ENOENT
	}
	return fmt.Errorf("parent %q is not a directory: %w", rel, unix.ENOTDIR)
}

// mkdirImplicit makes a parent directory the archive does not list. It
// copies the owner, mode and xattrs of the directory the lower layers show
// at rel, so the merged directory keeps them.
func (a *applier) mkdirImplicit(pfd int, name, rel string, opaque bool) error {
	mode, uid, gid := uint32(0o755), 0, 0
	var lower string
	var ts []unix.Timespec
	if !opaque {
		p, st, found, err := a.lowerLookup(rel)
		if err != nil {
			return err
		}
		if found {
			if !isDir(&st) {
				if st.Mode&unix.S_IFMT == unix.S_IFLNK {
					return fmt.Errorf("parent %q is a symbolic link in a lower layer: %w", rel, ErrUnsafePath)
				}
				return fmt.Errorf("parent %q is not a directory in a lower layer: %w", rel, unix.ENOTDIR)
			}
			mode, uid, gid, lower = st.Mode&0o7777, int(st.Uid), int(st.Gid), p
			ts = []unix.Timespec{st.Atim, st.Mtim}
		}
	}
	if err := unix.Mkdirat(pfd, name, 0o700); err != nil {
		return err
	}
	if err := a.chown(pfd, name, uid, gid); err != nil {
		return err
	}
	if err := unix.Fchmodat(pfd, name, mode, 0); err != nil {
		return err
	}
	if lower != "" {
		if err := a.copyXattrs(lower, procPath(pfd, name)); err != nil {
			return err
		}
		a.dirTimes = append(a.dirTimes, dirTime{rel: rel, ts: ts})
	}
	if opaque {
		return a.setOpaque(procPath(pfd, name))
	}
	return nil
}

// lowerLookup resolves rel in the merged view of the lower layers, with
// overlayfs rules: whiteouts hide, opaque directories stop the descent,
// only directories merge. It returns the path of what the merged view
// shows at rel. A parent that is not a directory fails the lookup (with
// ErrUnsafePath for a symbolic link).
func (a *applier) lowerLookup(rel string) (string, unix.Stat_t, bool, error) {
	layers := a.lowers
	comps := strings.Split(rel, "/")
	var st unix.Stat_t
	for i := range comps {
		prefix := strings.Join(comps[:i+1], "/")
		last := i == len(comps)-1
		var next []string
		for _, l := range layers {
			p := l + "/" + prefix
			if err := unix.Lstat(p, &st); err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				return "", st, false, fmt.Errorf("looking up %q in lower layers: %w", prefix, err)
			}
			if isWhiteout(&st) {
				break
			}
			if isDir(&st) {
				if last && len(next) == 0 {
					return p, st, true, nil
				}
				next = append(next, l)
				if isOpaque(p) {
					break
				}
				continue
			}
			if len(next) > 0 {
				break // a directory above hides what is below
			}
			if last {
				return p, st, true, nil
			}
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return "", st, false, fmt.Errorf("parent %q is a symbolic link in a lower layer: %w", prefix, ErrUnsafePath)
			}
			return "", st, false, fmt.Errorf("parent %q is not a directory in a lower layer: %w", prefix, unix.ENOTDIR)
		}
		if len(next) == 0 {
			return "", st, false, nil
		}
		layers = next
	}
	return "", st, false, nil
}

func isOpaque(p string) bool {
	buf := make([]byte, 4)
	n, err := unix.Lgetxattr(p, opaqueXattr, buf)
	return err == nil && n == 1 && buf[0] == 'y'
}

func (a *applier) setOpaque(p string) error {
	if err := unix.Setxattr(p, opaqueXattr, []byte("y"), 0); err != nil {
		return fmt.Errorf("marking directory opaque: %w", err)
	}
	return nil
}

// clear removes what the layer already holds at base in pfd, so an entry
// can take its place. A directory is kept when keepDir is set. It reports
// whether a whiteout was there (a directory replacing it must be opaque).
func (a *applier) clear(pfd int, base string, keepDir bool) (wasWhiteout, keptDir bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, false, nil
		}
		return false, false, err
	}
	if isDir(&st) {
		if keepDir {
			return false, true, nil
		}
		if err := os.RemoveAll(procPath(pfd, base)); err != nil {
			return false, false, err
		}
		return false, false, nil
	}
	if err := unix.Unlinkat(pfd, base, 0); err != nil {
		return false, false, err
	}
	return isWhiteout(&st), false, nil
}

// finishDirs sets directory times last: making entries inside a directory
// changes its modification time.
func (a *applier) finishDirs() error {
	for _, d := range a.dirTimes {
		if d.rel == "" {
			if err := unix.UtimesNanoAt(unix.AT_FDCWD, procPath(a.root, ""), d.ts, 0); err != nil {
				return fmt.Errorf("setting times of the layer root: %w", err)
			}
			continue
		}
		dir, base := splitRel(d.rel)
		fd, err := a.openDir(dir, false)
		if err != nil {
			continue // removed later in the layer
		}
		err = unix.UtimesNanoAt(fd, base, d.ts, unix.AT_SYMLINK_NOFOLLOW)
		unix.Close(fd)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("setting times of %q: %w", d.rel, err)
		}
	}
	return nil
}

// joinRel joins a directory and a name relative to the layer root.
func joinRel(dir, base string) string { return path.Join(dir, base) }
