package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox/ocispec"
)

// probeEnv makes this binary exit right after native.Init: the re-exec
// probe times how long starting this binary costs (what the supervisor
// and every container init pay, both being re-executions of it).
const probeEnv = "PODKIT_BENCH_EXEC_PROBE"

// exitIfProbe ends a re-exec started by the probe.
func exitIfProbe() {
	if os.Getenv(probeEnv) == "1" {
		os.Exit(0)
	}
}

// profileSamples are pieces of the native path timed on their own, next
// to each latency iteration, to attribute CreateContainer's time.
type profileSamples struct {
	// OverlayMount mounts a container's overlay rootfs.
	OverlayMount []time.Duration
	// ContainerCgroup is cgroups.Tree.EnsureContainer under a pod.
	ContainerCgroup []time.Duration
	// Spec is ocispec.Generate of the native container's spec.
	Spec []time.Duration
	// Record writes a small file durably (write, fsync, rename) in the
	// runtime root, as the runtime and the supervisor do for each record.
	Record []time.Duration
	// SelfExec is fork + exec of this binary until it exits right after
	// native.Init; TestboxExec the same for the small static testbox.
	SelfExec, TestboxExec []time.Duration
}

// profileOnce times each piece once.
func (n *node) profileOnce(ctx context.Context, rt *runtimeHandle, i int, record bool, s *profileSamples) error {
	id := fmt.Sprintf("prof-%d-%s", i, randomHex(3))
	var d [6]time.Duration

	sc, err := newScratch(filepath.Join(n.tmpDir, "scratch"), id, n.lower)
	if err != nil {
		return err
	}
	target := filepath.Join(n.tmpDir, "scratch", id, "rootfs")
	if err := os.Mkdir(target, 0o755); err != nil {
		return err
	}
	t := time.Now()
	err = overlay.MountAll(sc.mounts, target)
	d[0] = time.Since(t)
	if err != nil {
		return err
	}
	if err := overlay.Unmount(target); err != nil {
		return err
	}
	if err := sc.remove(); err != nil {
		return err
	}

	pod := benchPod(id, id)
	parent, err := n.tree.EnsurePod(ctx, pod)
	if err != nil {
		return err
	}
	t = time.Now()
	_, err = n.tree.EnsureContainer(ctx, parent, id, nil)
	d[1] = time.Since(t)
	if rerr := n.tree.Remove(ctx, parent); err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}

	sb := sandboxConfig(pod, parent, "", false)
	t = time.Now()
	_, err = ocispec.Generate(ocispec.Input{
		SandboxID: id, ContainerID: id, Sandbox: sb, Container: containerConfig(nil, "exit", "0"),
		RootfsPath: n.lower, NetNS: "/proc/self/ns/net", IPCNS: "/proc/self/ns/ipc", UTSNS: "/proc/self/ns/uts",
		ResolvConfPath: "/etc/resolv.conf", HostsPath: "/etc/hosts", ShmPath: "/dev/shm",
		CgroupsPath: parent + "/" + id,
	})
	d[2] = time.Since(t)
	if err != nil {
		return err
	}

	t = time.Now()
	err = durableWrite(filepath.Join(rt.root, id+".json"), []byte(`{"probe":true}`))
	d[3] = time.Since(t)
	if err != nil {
		return err
	}

	self, err := os.Executable()
	if err != nil {
		return err
	}
	for j, c := range []*exec.Cmd{
		exec.CommandContext(ctx, self),
		exec.CommandContext(ctx, filepath.Join(n.lower, "bin", "testbox"), "exit", "0"),
	} {
		c.Env = append(os.Environ(), probeEnv+"=1")
		t = time.Now()
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("exec probe %s: %w: %s", c.Path, err, out)
		}
		d[4+j] = time.Since(t)
	}

	if record {
		s.OverlayMount = append(s.OverlayMount, d[0])
		s.ContainerCgroup = append(s.ContainerCgroup, d[1])
		s.Spec = append(s.Spec, d[2])
		s.Record = append(s.Record, d[3])
		s.SelfExec = append(s.SelfExec, d[4])
		s.TestboxExec = append(s.TestboxExec, d[5])
	}
	return nil
}

// durableWrite writes a record the way the runtime does (temporary file,
// fsync, rename), then removes it.
func durableWrite(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("record %s: %w", path, err)
	}
	return os.Remove(path)
}
