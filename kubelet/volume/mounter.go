package volume

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// mounter is the kernel surface of the stage: the few mount operations it
// needs. The kernel implementation is the only one outside tests; unit tests
// swap in a recorder so that everything but the kernel itself is tested
// without root.
type mounter interface {
	// mountTmpfs mounts a tmpfs at target; size 0 is the kernel's default.
	mountTmpfs(target string, size int64) error
	// bindFD bind mounts the file or directory open at fd onto target.
	bindFD(fd int, target string) error
	// unmount unmounts target; not mounted is not an error.
	unmount(target string) error
	// isMountPoint reports whether path is a mount point.
	isMountPoint(path string) (bool, error)
	// mountsUnder lists the mount points at or below dir, deepest first.
	mountsUnder(dir string) ([]string, error)
}

type kernelMounter struct {
	mu sync.Mutex
	// noswap: 0 unknown, 1 supported, -1 not supported by the kernel.
	noswap int
}

var _ mounter = (*kernelMounter)(nil)

func newKernelMounter() *kernelMounter { return &kernelMounter{} }

func (k *kernelMounter) mountTmpfs(target string, size int64) error {
	var data string
	if size > 0 {
		data = "size=" + strconv.FormatInt(size, 10)
	}
	k.mu.Lock()
	noswap := k.noswap
	k.mu.Unlock()
	if noswap >= 0 {
		// noswap keeps secrets off the swap device (Linux 6.4+); older
		// kernels reject the option with EINVAL.
		err := unix.Mount("tmpfs", target, "tmpfs", 0, join(data, "noswap"))
		if err == nil {
			k.setNoswap(1)
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || noswap > 0 {
			return fmt.Errorf("mount tmpfs at %s: %w", target, err)
		}
	}
	if err := unix.Mount("tmpfs", target, "tmpfs", 0, data); err != nil {
		return fmt.Errorf("mount tmpfs at %s: %w", target, err)
	}
	if noswap == 0 {
		k.setNoswap(-1)
	}
	return nil
}

func (k *kernelMounter) setNoswap(v int) {
	k.mu.Lock()
	k.noswap = v
	k.mu.Unlock()
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

func (k *kernelMounter) bindFD(fd int, target string) error {
	src := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s at %s: %w", src, target, err)
	}
	return nil
}

func (k *kernelMounter) unmount(target string) error {
	err := unix.Unmount(target, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(target, unix.MNT_DETACH)
	}
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", target, err)
}

func (k *kernelMounter) isMountPoint(path string) (bool, error) {
	mounted, err := mountinfo.Mounted(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return mounted, err
}

func (k *kernelMounter) mountsUnder(dir string) ([]string, error) {
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	points := make([]string, 0, len(infos))
	for _, in := range infos {
		points = append(points, in.Mountpoint)
	}
	return deepestFirst(points), nil
}

// deepestFirst sorts mount points so that nested ones come before their
// parents, keeping duplicates (stacked mounts) adjacent.
func deepestFirst(points []string) []string {
	slices.SortStableFunc(points, func(a, b string) int { return len(b) - len(a) })
	return points
}
