package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/cgroups"
	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/netns"
	"github.com/podkit/podkit/sandbox/native"
)

// node is the benchmark's throwaway node: a network namespace standing in
// for the host with a bridge in it, a cgroup root, a run directory for
// runtime roots and OCI state, and a temporary directory for the root
// filesystem, overlay upper dirs and logs. close undoes everything, in
// the reverse order of creation.
type node struct {
	log    *slog.Logger
	suffix string
	runDir string
	tmpDir string
	nodeNS *netns.NS
	tree   *cgroups.Tree
	bridge *cni.Bridge
	// lower is the read-only root filesystem every container's overlay
	// uses as its lower directory (the "cached image").
	lower string
	// cgroupNote says what was done (or could not be done) so crun runs
	// on this hybrid cgroup host.
	cgroupNote string
	// crunNS is the thread crun runs from in CrunHide mode.
	crunNS *nsThread

	undo []undoStep
}

type undoStep struct {
	what string
	fn   func(ctx context.Context) error
}

// onClose registers fn to run at close, before the steps registered
// earlier.
func (n *node) onClose(what string, fn func(ctx context.Context) error) {
	n.undo = append(n.undo, undoStep{what, fn})
}

// close runs every registered step, last first, even after failures.
func (n *node) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	for i := len(n.undo) - 1; i >= 0; i-- {
		s := n.undo[i]
		if err := s.fn(ctx); err != nil {
			n.log.Error("cleanup", "step", s.what, "err", err)
			errs = append(errs, fmt.Errorf("cleanup %s: %w", s.what, err))
		}
	}
	n.undo = nil
	return errors.Join(errs...)
}

// newNode builds the node. On error it removes what it made.
func newNode(ctx context.Context, cfg *config) (_ *node, err error) {
	n := &node{log: cfg.Logger, suffix: randomHex(3)}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.close())
		}
	}()
	n.runDir = filepath.Join("/run", "podkit-bench-"+n.suffix)
	if err := os.MkdirAll(n.runDir, 0o711); err != nil {
		return nil, fmt.Errorf("run dir: %w", err)
	}
	n.onClose("remove "+n.runDir, func(context.Context) error { return os.RemoveAll(n.runDir) })
	if cfg.TmpfsRoot {
		// Like a real node's /run: records written there need no disk.
		if err := unix.Mount("tmpfs", n.runDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=711,size=1g"); err != nil {
			return nil, fmt.Errorf("tmpfs on %s: %w", n.runDir, err)
		}
		n.onClose("unmount the tmpfs on "+n.runDir, func(context.Context) error { return unix.Unmount(n.runDir, 0) })
	}
	if n.tmpDir, err = os.MkdirTemp("", "podkit-bench-"); err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	n.onClose("remove "+n.tmpDir, func(context.Context) error { return os.RemoveAll(n.tmpDir) })

	// Before the cgroup tree: it discovers the hierarchies on first use.
	if wantsCrun(cfg.OCI) {
		if err := n.prepareCrun(cfg.CrunCgroups); err != nil {
			return nil, err
		}
	}

	if n.nodeNS, err = netns.New(filepath.Join(n.runDir, "netns"), "node"); err != nil {
		return nil, err
	}
	n.onClose("remove the node netns", func(context.Context) error { return n.nodeNS.Remove() })
	if err := loopbackUp(n.nodeNS); err != nil {
		return nil, err
	}

	if n.tree, err = cgroups.New(cgroups.WithRoot("/podkit-bench-"+n.suffix), cgroups.WithLogger(discard())); err != nil {
		return nil, err
	}
	// runc and crun also make their cgroups' parents in hierarchies the
	// tree does not manage (cgroup2 on a hybrid host): remove what is left
	// after the tree is gone.
	n.onClose("remove leftover cgroup dirs", func(context.Context) error { return removeCgroupDirs(n.tree.Root()) })
	n.onClose("remove the cgroup tree", n.tree.Cleanup)

	cidr := netip.MustParsePrefix(fmt.Sprintf("10.253.%d.0/24", randomByte()))
	n.bridge, err = cni.NewBridge(cni.BridgeConfig{PodCIDR: cidr, StateDir: filepath.Join(n.tmpDir, "cni")},
		cni.WithNodeNetNS(n.nodeNS.Path()), cni.WithBridgeName("pkbb"+n.suffix), cni.WithLogger(discard()))
	if err != nil {
		return nil, err
	}
	n.onClose("remove the bridge", func(ctx context.Context) error {
		return errors.Join(n.bridge.Cleanup(ctx), n.bridge.Close())
	})

	if n.lower, err = layoutRootfs(ctx, filepath.Join(n.tmpDir, "lower"), cfg.Testbox, filepath.Join(n.tmpDir, "build")); err != nil {
		return nil, err
	}
	return n, nil
}

func loopbackUp(ns *netns.NS) error {
	h, err := ns.Handle()
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("node netns lo: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("node netns lo up: %w", err)
	}
	return nil
}

// runtimeHandle is a native Runtime with its own root (so each phase gets
// a fresh supervisor) and the means to tear it down completely.
type runtimeHandle struct {
	*native.Runtime
	root   string
	closed bool
}

// newRuntime starts a native Runtime on root n.runDir/name.
func (n *node) newRuntime(ctx context.Context, name string) (*runtimeHandle, error) {
	root := filepath.Join(n.runDir, name)
	if err := os.MkdirAll(root, 0o711); err != nil {
		return nil, fmt.Errorf("runtime root: %w", err)
	}
	rt, err := native.New(ctx, native.Config{
		Root: root, Network: n.bridge, Cgroups: n.tree,
		SupervisorIdleExit: 200 * time.Millisecond, Logger: n.log,
	})
	if err != nil {
		return nil, err
	}
	h := &runtimeHandle{Runtime: rt, root: root}
	n.onClose("runtime "+name, h.shutdown)
	return h, nil
}

// supervisorPID reads the pid of the runtime's supervisor.
func (h *runtimeHandle) supervisorPID() (int, error) {
	b, err := os.ReadFile(filepath.Join(h.root, "supervisor.pid"))
	if err != nil {
		return 0, fmt.Errorf("supervisor pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("supervisor pid file %s/supervisor.pid: %w", h.root, err)
	}
	return pid, nil
}

// shutdown removes every sandbox the runtime has, disconnects, and waits
// for the supervisor to exit on its idle timer (killing it, by pid, if it
// lingers: it is this program's child).
func (h *runtimeHandle) shutdown(ctx context.Context) error {
	if h.closed {
		return nil
	}
	h.closed = true
	var errs []error
	sbs, _, err := h.List(ctx)
	errs = append(errs, err)
	for _, sb := range sbs {
		errs = append(errs, h.RemovePodSandbox(ctx, sb.ID))
	}
	pid, perr := h.supervisorPID()
	errs = append(errs, h.Close())
	if perr == nil {
		errs = append(errs, waitGone(pid, 30*time.Second))
	}
	return errors.Join(errs...)
}

// waitGone waits for process pid to exit, then SIGKILLs it.
func waitGone(pid int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return fmt.Errorf("process %d still running after %v: killed", pid, limit)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomByte() byte {
	var b [1]byte
	_, _ = rand.Read(b[:])
	return b[0]
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// removeCgroupDirs removes the (empty) cgroup directory root and its
// descendants in every mounted hierarchy.
func removeCgroupDirs(root string) error {
	dirs, err := filepath.Glob(filepath.Join(cgroupRoot, "*", root))
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(cgroupRoot, root)); err == nil {
		dirs = append(dirs, filepath.Join(cgroupRoot, root))
	}
	var errs []error
	for _, d := range dirs {
		var all []string
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				all = append(all, p)
			}
			return nil
		})
		for i := len(all) - 1; i >= 0; i-- { // children first
			if err := os.Remove(all[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
