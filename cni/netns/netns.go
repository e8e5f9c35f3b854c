// Package netns creates, enters and removes network namespaces pinned by a
// bind mount on a file (like `ip netns add`, but under any directory), so a
// namespace outlives the thread that created it and can be named by a path.
//
// In podkit's birth sequence the sandbox pins a pod's network namespace
// (step 12) and hands its path to a cni.Networker (step 13); tests and the
// cni conformance suite use this package to make throwaway namespaces.
//
// Namespace work follows the CNI project's pkg/ns guidance: prefer
// netlink.NewHandleAt on the namespace (no thread switching at all, see
// Handle); when a syscall must run inside the namespace, Do runs it on a
// dedicated, locked OS thread that is thrown away if it cannot be switched
// back.
package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ErrNotNetNS reports a path that exists but is not a network namespace
// (for example a pin file whose bind mount was already removed).
var ErrNotNetNS = errors.New("not a network namespace")

// NS is a network namespace reachable through a path: a pinned bind mount
// created by New, or any nsfs path (/proc/<pid>/ns/net) opened with Open.
type NS struct {
	path   string
	pinned bool
}

// New creates a network namespace and pins it at dir/name. The caller owns
// it and must call Remove. name must be a single path element.
func New(dir, name string) (*NS, error) {
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return nil, fmt.Errorf("netns: invalid name %q", name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("netns: create dir %s: %w", dir, err)
	}
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return nil, fmt.Errorf("netns: create pin file: %w", err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(p)
		return nil, fmt.Errorf("netns: create pin file: %w", err)
	}
	errc := make(chan error, 1)
	go func() {
		// Switch back afterwards rather than let the thread die: a locked
		// goroutine may be running on the main thread, which the runtime
		// cannot destroy, and /proc/self/ns/net follows the main thread.
		runtime.LockOSThread()
		orig, err := vnetns.Get()
		if err != nil {
			errc <- fmt.Errorf("current namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		src := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		merr := unix.Mount(src, p, "none", unix.MS_BIND, "")
		if merr != nil {
			merr = fmt.Errorf("bind mount %s: %w", src, merr)
		}
		if err := vnetns.Set(orig); err != nil {
			// Stay locked so the runtime retires the thread.
			errc <- errors.Join(merr, fmt.Errorf("return to original namespace: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- merr
	}()
	if err := <-errc; err != nil {
		_ = Remove(p)
		return nil, fmt.Errorf("netns: create %s: %w", p, err)
	}
	return &NS{path: p, pinned: true}, nil
}

// Open returns the namespace at path after checking that it is one.
func Open(path string) (*NS, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	return &NS{path: path}, nil
}

// Check returns nil when path is a network namespace, an error wrapping
// os.ErrNotExist when it is missing, and ErrNotNetNS when it is something
// else.
func Check(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("netns: %w", &os.PathError{Op: "statfs", Path: path, Err: err})
	}
	if st.Type != unix.NSFS_MAGIC {
		return fmt.Errorf("netns: %s: %w", path, ErrNotNetNS)
	}
	return nil
}

// Path is the namespace's path, suitable for cni.Attachment.NetNS.
func (n *NS) Path() string { return n.path }

// Do runs fn on a locked OS thread inside the namespace.
func (n *NS) Do(fn func() error) error { return Do(n.path, fn) }

// Handle opens a netlink handle bound to the namespace; close it when done.
func (n *NS) Handle() (*netlink.Handle, error) { return HandleAt(n.path) }

// Remove unpins the namespace (the kernel frees it once nothing else holds
// it) and deletes the pin file. Namespaces opened with Open are left alone.
// Remove is idempotent.
func (n *NS) Remove() error {
	if !n.pinned {
		return nil
	}
	return Remove(n.path)
}

// Remove unmounts the pin at path and deletes the file; a missing or
// already unmounted pin is not an error.
func Remove(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("netns: unmount %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("netns: remove %s: %w", path, err)
	}
	return nil
}

// HandleAt opens a netlink handle bound to the namespace at path. The
// handle's sockets live in that namespace, so no thread ever switches.
func HandleAt(path string) (*netlink.Handle, error) {
	ns, err := vnetns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("netns: open %s: %w", path, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netns: netlink handle in %s: %w", path, err)
	}
	return h, nil
}

// Do runs fn on a dedicated, locked OS thread switched into the namespace
// at path. The caller's goroutine and thread are untouched. If the thread
// cannot be switched back it is left locked so the runtime destroys it.
func Do(path string, fn func() error) error {
	target, err := vnetns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("netns: open %s: %w", path, err)
	}
	defer target.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := vnetns.Get()
		if err != nil {
			errc <- fmt.Errorf("netns: current namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := vnetns.Set(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: enter %s: %w", path, err)
			return
		}
		ferr := fn()
		if err := vnetns.Set(orig); err != nil {
			// Stay locked: the thread dies with the goroutine.
			errc <- errors.Join(ferr, fmt.Errorf("netns: return from %s: %w", path, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
