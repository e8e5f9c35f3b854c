package overlay

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// mountFlags maps mount(8) options that are flags, not filesystem data.
var mountFlags = map[string]struct {
	clear bool
	flag  uintptr
}{
	"ro":          {false, unix.MS_RDONLY},
	"rw":          {true, unix.MS_RDONLY},
	"nosuid":      {false, unix.MS_NOSUID},
	"suid":        {true, unix.MS_NOSUID},
	"nodev":       {false, unix.MS_NODEV},
	"dev":         {true, unix.MS_NODEV},
	"noexec":      {false, unix.MS_NOEXEC},
	"exec":        {true, unix.MS_NOEXEC},
	"noatime":     {false, unix.MS_NOATIME},
	"relatime":    {false, unix.MS_RELATIME},
	"strictatime": {false, unix.MS_STRICTATIME},
	"bind":        {false, unix.MS_BIND},
	"rbind":       {false, unix.MS_BIND | unix.MS_REC},
}

// parseOptions splits mount options into flags and filesystem data.
func parseOptions(options []string) (flags uintptr, data []string) {
	for _, o := range options {
		if f, ok := mountFlags[o]; ok {
			if f.clear {
				flags &^= f.flag
			} else {
				flags |= f.flag
			}
			continue
		}
		data = append(data, o)
	}
	return flags, data
}

// MountAll mounts mounts on target, in order (the last one on top).
// Overlay mounts whose option string does not fit in a page (the limit of
// mount(2)) are made with the new mount API, one lower directory at a time.
func MountAll(mounts []Mount, target string) error {
	for i, m := range mounts {
		if err := mountOne(m, target); err != nil {
			// Undo what this call mounted.
			for j := 0; j < i; j++ {
				_ = unix.Unmount(target, unix.MNT_DETACH)
			}
			return err
		}
	}
	return nil
}

func mountOne(m Mount, target string) error {
	flags, data := parseOptions(m.Options)
	switch m.Type {
	case "bind":
		if flags&unix.MS_BIND == 0 {
			flags |= unix.MS_BIND
		}
		if err := unix.Mount(m.Source, target, "", flags&(unix.MS_BIND|unix.MS_REC), ""); err != nil {
			return fmt.Errorf("bind-mounting %s on %s: %w", m.Source, target, err)
		}
		if flags&unix.MS_RDONLY != 0 {
			// A bind mount takes its read-only flag only on remount.
			remount := unix.MS_BIND | unix.MS_REMOUNT | (flags &^ (unix.MS_BIND | unix.MS_REC))
			if err := unix.Mount("", target, "", remount, ""); err != nil {
				_ = unix.Unmount(target, unix.MNT_DETACH)
				return fmt.Errorf("making bind mount %s read-only: %w", target, err)
			}
		}
		return nil
	case "overlay":
		opts := strings.Join(data, ",")
		if len(opts) < os.Getpagesize() {
			if err := unix.Mount(m.Source, target, "overlay", flags, opts); err != nil {
				return fmt.Errorf("mounting overlay on %s: %w", target, err)
			}
			return nil
		}
		return mountOverlayFsconfig(m.Source, data, flags, target)
	default:
		if err := unix.Mount(m.Source, target, m.Type, flags, strings.Join(data, ",")); err != nil {
			return fmt.Errorf("mounting %s (%s) on %s: %w", m.Source, m.Type, target, err)
		}
		return nil
	}
}

// mountOverlayFsconfig mounts an overlay with fsopen/fsconfig/fsmount,
// passing lower directories one by one ("lowerdir+", Linux 6.5 and later),
// which lifts the page-size limit of the mount(2) data string.
func mountOverlayFsconfig(source string, data []string, flags uintptr, target string) (err error) {
	fsfd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fsopen overlay: %w", err)
	}
	defer unix.Close(fsfd)
	if err := unix.FsconfigSetString(fsfd, "source", source); err != nil {
		return fmt.Errorf("overlay source: %w", err)
	}
	for _, o := range data {
		key, value, hasValue := strings.Cut(o, "=")
		switch {
		case key == "lowerdir":
			for _, dir := range strings.Split(value, ":") {
				if err := unix.FsconfigSetString(fsfd, "lowerdir+", dir); err != nil {
					return fmt.Errorf("overlay lowerdir+ %s (needs Linux 6.5): %w", dir, err)
				}
			}
		case hasValue:
			if err := unix.FsconfigSetString(fsfd, key, value); err != nil {
				return fmt.Errorf("overlay option %s: %w", key, err)
			}
		default:
			if err := unix.FsconfigSetFlag(fsfd, key); err != nil {
				return fmt.Errorf("overlay option %s: %w", key, err)
			}
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return fmt.Errorf("creating overlay: %w", err)
	}
	var attr int
	if flags&unix.MS_RDONLY != 0 {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	if flags&unix.MS_NOSUID != 0 {
		attr |= unix.MOUNT_ATTR_NOSUID
	}
	if flags&unix.MS_NODEV != 0 {
		attr |= unix.MOUNT_ATTR_NODEV
	}
	if flags&unix.MS_NOEXEC != 0 {
		attr |= unix.MOUNT_ATTR_NOEXEC
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, attr)
	if err != nil {
		return fmt.Errorf("fsmount overlay: %w", err)
	}
	defer unix.Close(mfd)
	if err := unix.MoveMount(mfd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attaching overlay on %s: %w", target, err)
	}
	return nil
}

// Unmount unmounts everything mounted on target, top first. It is
// idempotent: a target that is not a mount point, or does not exist, is not
// an error.
func Unmount(target string) error {
	for {
		err := unix.Unmount(target, unix.UMOUNT_NOFOLLOW)
		switch {
		case err == nil:
			continue
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return nil
		default:
			return fmt.Errorf("unmounting %s: %w", target, err)
		}
	}
}

// MountsUsing lists the mounts that involve dir: mounted on or under it,
// or overlays whose layers (upperdir, lowerdir, workdir) live under it.
// An empty result after teardown proves nothing was left mounted.
func MountsUsing(dir string) ([]*mountinfo.Info, error) {
	dir = strings.TrimSuffix(dir, "/")
	return mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		if m.Mountpoint == dir || strings.HasPrefix(m.Mountpoint, dir+"/") {
			return false, false
		}
		if m.FSType == "overlay" && strings.Contains(m.VFSOptions, dir+"/") {
			return false, false
		}
		if strings.HasPrefix(m.Root, dir+"/") {
			return false, false
		}
		return true, false
	})
}
