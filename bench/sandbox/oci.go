package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/ocispec"
)

// ociRuntime is one OCI runtime binary compared with the native runtime.
type ociRuntime struct {
	Name, Path, Version string
	// Run are the measured `run` latencies.
	Run []time.Duration
	// Err says why the runtime could not be measured ("" when it was).
	Err string

	stateRoot string
	ns        *nsThread
}

// newOCIRuntime finds the runtime binary and gives it a state root of its
// own; a runtime that cannot be found is returned with Err set.
func (n *node) newOCIRuntime(ctx context.Context, name string) *ociRuntime {
	o := &ociRuntime{Name: filepath.Base(name), stateRoot: filepath.Join(n.runDir, "oci-"+filepath.Base(name))}
	p, err := exec.LookPath(name)
	if err != nil {
		o.Err = fmt.Sprintf("not installed (%v)", err)
		return o
	}
	o.Path = p
	if o.Name == "crun" {
		o.ns = n.crunNS
	}
	if out, err := exec.CommandContext(ctx, p, "--version").Output(); err == nil {
		o.Version, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	}
	if err := os.MkdirAll(o.stateRoot, 0o700); err != nil {
		o.Err = err.Error()
	}
	return o
}

// ociOnce runs `testbox exit 0` with `<runtime> run --bundle B id` and
// times the command from fork to exit. The bundle — an overlay rootfs over
// the same lower directory, the DNS files, and config.json from
// ocispec.Generate with the node's network and IPC namespaces and new
// PID, mount and UTS namespaces — is prepared before the clock starts.
func (n *node) ociOnce(ctx context.Context, o *ociRuntime, i int) (d time.Duration, err error) {
	id := fmt.Sprintf("bench-%s-%d-%s", o.Name, i, randomHex(3))
	bdir := filepath.Join(n.runDir, "bundles", id)
	rootfs := filepath.Join(bdir, "rootfs")
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return 0, fmt.Errorf("bundle: %w", err)
	}
	sc, err := newScratch(filepath.Join(n.tmpDir, "scratch"), id, n.lower)
	if err != nil {
		return 0, err
	}
	defer func() {
		err = errors.Join(err, sc.remove())
	}()
	err = o.within(func() (err error) {
		if err := overlay.MountAll(sc.mounts, rootfs); err != nil {
			return fmt.Errorf("bundle rootfs: %w", err)
		}
		defer func() {
			err = errors.Join(err, overlay.Unmount(rootfs))
		}()
		if err := n.writeBundle(bdir, id, rootfs); err != nil {
			return err
		}
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, o.Path, "--root", o.stateRoot, "run", "--bundle", bdir, id)
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err = cmd.Run()
		d = time.Since(start)
		if err != nil {
			// A container left behind by a failed run must not hold the mount.
			_ = exec.Command(o.Path, "--root", o.stateRoot, "delete", "--force", id).Run()
			return fmt.Errorf("%s run: %w: %s", o.Name, err, strings.TrimSpace(out.String()))
		}
		return nil
	})
	return d, errors.Join(err, os.RemoveAll(bdir))
}

// within runs fn where the runtime must run: on the thread with the
// hidden cgroup2 hierarchy for crun in CrunHide mode (the rootfs must be
// mounted there too: the host's mounts do not propagate), else right here.
func (o *ociRuntime) within(fn func() error) error {
	if o.ns != nil {
		return o.ns.do(fn)
	}
	return fn()
}

// writeBundle writes the DNS files and config.json of container id.
func (n *node) writeBundle(bdir, id, rootfs string) error {
	files := map[string][]byte{"resolv.conf": resolvConf, "hosts": hostsFile, "hostname": []byte("bench\n")}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(bdir, name), data, 0o644); err != nil {
			return fmt.Errorf("bundle: %w", err)
		}
	}
	sb := &sandbox.SandboxConfig{
		Pod:         sandbox.PodMeta{Name: id, Namespace: benchNamespace, UID: id},
		Hostname:    "bench",
		HostNetwork: true, HostIPC: true,
	}
	spec, err := ocispec.Generate(ocispec.Input{
		SandboxID: id, ContainerID: id, Sandbox: sb,
		Container:  containerConfig(nil, "exit", "0"),
		RootfsPath: rootfs,
		// Host network and IPC (no networking, like a bare `crun run`);
		// new PID, mount and UTS namespaces.
		HostNetwork: true, HostIPC: true, Hostname: "bench",
		ResolvConfPath: filepath.Join(bdir, "resolv.conf"),
		HostsPath:      filepath.Join(bdir, "hosts"),
		HostnamePath:   filepath.Join(bdir, "hostname"),
		ShmPath:        "/dev/shm",
		CgroupsPath:    path.Join(n.tree.Root(), "oci", id),
	})
	if err != nil {
		return fmt.Errorf("bundle spec: %w", err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(bdir, "config.json"), b, 0o644); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	return nil
}
