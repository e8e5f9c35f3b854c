package overlay

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// rootMeta applies a "./" entry to the layer root.
func (a *applier) rootMeta(hdr *tar.Header) error {
	if err := a.chown(a.root, "", hdr.Uid, hdr.Gid); err != nil {
		return err
	}
	if err := unix.Chmod(procPath(a.root, ""), uint32(hdr.Mode&0o7777)); err != nil {
		return fmt.Errorf("chmod layer root: %w", err)
	}
	if err := a.xattrs(hdr, procPath(a.root, "")); err != nil {
		return err
	}
	a.dirTimes = append(a.dirTimes, dirTime{rel: "", ts: times(hdr)})
	return nil
}

// whiteout applies ".wh.name" (hide name of the lower layers) and
// ".wh..wh..opq" (hide every lower entry of the directory). Whiteouts only
// affect lower layers, so a base layer ignores them, and an entry this
// layer made itself stays.
func (a *applier) whiteout(dir, base string) error {
	name := strings.TrimPrefix(base, whiteoutPrefix)
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("whiteout of %q: %w", name, ErrUnsafePath)
	}
	if len(a.lowers) == 0 {
		return nil
	}
	if base == whiteoutOpaque {
		fd, err := a.openDir(dir, true)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return a.setOpaque(procPath(fd, ""))
	}
	if strings.HasPrefix(base, whiteoutMeta) {
		return nil
	}
	rel := joinRel(dir, name)
	fd, err := a.openDir(dir, false)
	switch {
	case err == nil:
		defer unix.Close(fd)
		var st unix.Stat_t
		err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			if isDir(&st) {
				// This layer made the directory; lower content must not
				// merge into it.
				return a.setOpaque(procPath(fd, name))
			}
			return nil
		}
		if !errors.Is(err, unix.ENOENT) {
			return err
		}
	case !errors.Is(err, unix.ENOENT):
		return err
	}
	_, _, found, err := a.lowerLookup(rel)
	if err != nil || !found {
		return err
	}
	if fd < 0 {
		if fd, err = a.openDir(dir, true); err != nil {
			return err
		}
		defer unix.Close(fd)
	}
	if err := unix.Mknodat(fd, name, unix.S_IFCHR, 0); err != nil {
		return fmt.Errorf("creating whiteout: %w", err)
	}
	return nil
}

func (a *applier) mkdir(hdr *tar.Header, rel string) error {
	dir, base := splitRel(rel)
	pfd, err := a.openDir(dir, true)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	wasWhiteout, kept, err := a.clear(pfd, base, true)
	if err != nil {
		return err
	}
	if !kept {
		if err := unix.Mkdirat(pfd, base, 0o700); err != nil {
			return err
		}
	}
	if err := a.meta(pfd, base, hdr, true); err != nil {
		return err
	}
	if wasWhiteout {
		if err := a.setOpaque(procPath(pfd, base)); err != nil {
			return err
		}
	}
	a.dirTimes = append(a.dirTimes, dirTime{rel: rel, ts: times(hdr)})
	return nil
}

func (a *applier) file(hdr *tar.Header, rel string, r io.Reader) error {
	dir, base := splitRel(rel)
	pfd, err := a.openDir(dir, true)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if _, _, err := a.clear(pfd, base, false); err != nil {
		return err
	}
	fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), rel)
	n, err := io.CopyBuffer(struct{ io.Writer }{f}, r, a.buf)
	a.written += n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing content: %w", err)
	}
	if err := a.meta(pfd, base, hdr, true); err != nil {
		return err
	}
	return unix.UtimesNanoAt(pfd, base, times(hdr), unix.AT_SYMLINK_NOFOLLOW)
}

func (a *applier) symlink(hdr *tar.Header, rel string) error {
	dir, base := splitRel(rel)
	pfd, err := a.openDir(dir, true)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if _, _, err := a.clear(pfd, base, false); err != nil {
		return err
	}
	// The target is stored as is: a link is only dangerous when followed,
	// and nothing here follows one.
	if err := unix.Symlinkat(hdr.Linkname, pfd, base); err != nil {
		return err
	}
	if err := a.meta(pfd, base, hdr, false); err != nil {
		return err
	}
	return unix.UtimesNanoAt(pfd, base, times(hdr), unix.AT_SYMLINK_NOFOLLOW)
}

func (a *applier) node(hdr *tar.Header, rel string) error {
	dir, base := splitRel(rel)
	pfd, err := a.openDir(dir, true)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if _, _, err := a.clear(pfd, base, false); err != nil {
		return err
	}
	mode := uint32(hdr.Mode & 0o7777)
	switch hdr.Typeflag {
	case tar.TypeChar:
		mode |= unix.S_IFCHR
	case tar.TypeBlock:
		mode |= unix.S_IFBLK
	default:
		mode |= unix.S_IFIFO
	}
	dev := int(unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor)))
	if err := unix.Mknodat(pfd, base, mode, dev); err != nil {
		if errors.Is(err, unix.EPERM) {
			a.log.DebugContext(a.ctx, "skipping device node the kernel refuses", "path", rel)
			return nil
		}
		return err
	}
	if err := a.meta(pfd, base, hdr, true); err != nil {
		return err
	}
	return unix.UtimesNanoAt(pfd, base, times(hdr), unix.AT_SYMLINK_NOFOLLOW)
}

// hardlink links rel to an earlier entry; a target only the lower layers
// hold is copied up into this layer first, as overlayfs would on write.
func (a *applier) hardlink(hdr *tar.Header, rel string) error {
	target, err := cleanName(hdr.Linkname)
	if err != nil {
		return fmt.Errorf("hard link target %q: %w", hdr.Linkname, err)
	}
	if target == "" {
		return fmt.Errorf("hard link to the layer root: %w", ErrUnsafePath)
	}
	if target == rel {
		return nil
	}
	tdir, tbase := splitRel(target)
	tfd, err := a.upperTarget(tdir, tbase)
	if err != nil {
		return fmt.Errorf("hard link target %q: %w", target, err)
	}
	defer unix.Close(tfd)
	dir, base := splitRel(rel)
	pfd, err := a.openDir(dir, true)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if _, _, err := a.clear(pfd, base, false); err != nil {
		return err
	}
	return unix.Linkat(tfd, tbase, pfd, base, 0)
}

// upperTarget opens the directory of a hard link target in this layer,
// copying the target up from the lower layers when only they hold it.
func (a *applier) upperTarget(dir, base string) (int, error) {
	fd, err := a.openDir(dir, false)
	if err == nil {
		var st unix.Stat_t
		serr := unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case serr == nil && isDir(&st):
			unix.Close(fd)
			return -1, fmt.Errorf("is a directory: %w", ErrUnsafePath)
		case serr == nil && !isWhiteout(&st):
			return fd, nil
		case serr == nil: // whited out by this layer
			unix.Close(fd)
			return -1, unix.ENOENT
		case !errors.Is(serr, unix.ENOENT):
			unix.Close(fd)
			return -1, serr
		}
		unix.Close(fd)
	} else if !errors.Is(err, unix.ENOENT) {
		return -1, err
	}
	p, st, found, err := a.lowerLookup(joinRel(dir, base))
	if err != nil {
		return -1, err
	}
	if !found {
		return -1, fmt.Errorf("not in this layer nor below: %w", unix.ENOENT)
	}
	if isDir(&st) {
		return -1, fmt.Errorf("is a directory: %w", ErrUnsafePath)
	}
	if fd, err = a.openDir(dir, true); err != nil {
		return -1, err
	}
	if err := a.copyUp(fd, base, p, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("copying up from a lower layer: %w", err)
	}
	return fd, nil
}

// copyUp copies the lower-layer file src (not a directory) to base in pfd
// with its owner, mode, xattrs and times.
func (a *applier) copyUp(pfd int, base, src string, st *unix.Stat_t) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer in.Close()
		fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		out := os.NewFile(uintptr(fd), base)
		_, err = io.CopyBuffer(struct{ io.Writer }{out}, in, a.buf)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	case unix.S_IFLNK:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := unix.Symlinkat(target, pfd, base); err != nil {
			return err
		}
	default:
		if err := unix.Mknodat(pfd, base, st.Mode, int(st.Rdev)); err != nil {
			return err
		}
	}
	if err := a.chown(pfd, base, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		if err := unix.Fchmodat(pfd, base, st.Mode&0o7777, 0); err != nil {
			return err
		}
	}
	if err := a.copyXattrs(src, procPath(pfd, base)); err != nil {
		return err
	}
	return unix.UtimesNanoAt(pfd, base, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
}

// meta sets owner, mode (unless a symbolic link) and xattrs from hdr.
func (a *applier) meta(pfd int, base string, hdr *tar.Header, chmod bool) error {
	if err := a.chown(pfd, base, hdr.Uid, hdr.Gid); err != nil {
		return err
	}
	if chmod {
		// After chown, which clears set-user-ID bits.
		if err := unix.Fchmodat(pfd, base, uint32(hdr.Mode&0o7777), 0); err != nil {
			return fmt.Errorf("chmod: %w", err)
		}
	}
	return a.xattrs(hdr, procPath(pfd, base))
}

func (a *applier) chown(pfd int, base string, uid, gid int) error {
	flags := unix.AT_SYMLINK_NOFOLLOW
	if base == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	err := unix.Fchownat(pfd, base, uid, gid, flags)
	if err != nil && errors.Is(err, unix.EPERM) && !a.privileged {
		return nil // unprivileged: files stay owned by the caller
	}
	if err != nil {
		return fmt.Errorf("chown %d:%d: %w", uid, gid, err)
	}
	return nil
}

// reservedXattr reports xattrs a layer must not set: overlayfs reads its
// own attributes from the layers, so a layer could forge opaque
// directories or redirects.
func reservedXattr(name string) bool {
	return strings.HasPrefix(name, "trusted.overlay.") || strings.HasPrefix(name, "user.overlay.")
}

const paxXattr = "SCHILY.xattr."

func (a *applier) xattrs(hdr *tar.Header, p string) error {
	for k, v := range hdr.PAXRecords {
		name, ok := strings.CutPrefix(k, paxXattr)
		if !ok {
			continue
		}
		if err := a.setXattr(p, name, []byte(v)); err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) setXattr(p, name string, value []byte) error {
	if reservedXattr(name) {
		a.log.DebugContext(a.ctx, "skipping reserved xattr", "name", name)
		return nil
	}
	set := unix.Lsetxattr
	if rest, ok := strings.CutPrefix(p, "/proc/self/fd/"); ok && !strings.Contains(rest, "/") {
		set = unix.Setxattr // p is a descriptor itself: follow it
	}
	err := set(p, name, value, 0)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EPERM) && (!a.privileged || strings.HasPrefix(name, "user.")):
		// Not supported by the filesystem, or not for this file type
		// (user.* on symbolic links) or this caller.
		a.log.DebugContext(a.ctx, "skipping xattr", "name", name, "err", err)
		return nil
	}
	return fmt.Errorf("setting xattr %s: %w", name, err)
}

// copyXattrs copies the xattrs of the lower-layer file src to dst.
func (a *applier) copyXattrs(src, dst string) error {
	size, err := unix.Llistxattr(src, nil)
	if err != nil || size == 0 {
		return nil //nolint:nilerr // no xattrs, or none readable
	}
	buf := make([]byte, size)
	if size, err = unix.Llistxattr(src, buf); err != nil {
		return nil //nolint:nilerr // changed under us; nothing to copy
	}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:size]), "\x00"), "\x00") {
		if name == "" || reservedXattr(name) {
			continue
		}
		vsize, err := unix.Lgetxattr(src, name, nil)
		if err != nil {
			continue
		}
		val := make([]byte, vsize)
		if vsize, err = unix.Lgetxattr(src, name, val); err != nil {
			continue
		}
		if err := a.setXattr(dst, name, val[:vsize]); err != nil {
			return err
		}
	}
	return nil
}

// times returns the access and modification times of hdr.
func times(hdr *tar.Header) []unix.Timespec {
	mt := hdr.ModTime
	if mt.IsZero() {
		mt = time.Unix(0, 0)
	}
	at := hdr.AccessTime
	if at.IsZero() {
		at = mt
	}
	return []unix.Timespec{
		{Sec: at.Unix(), Nsec: int64(at.Nanosecond())},
		{Sec: mt.Unix(), Nsec: int64(mt.Nanosecond())},
	}
}
