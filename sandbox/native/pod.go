package native

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/netns"
	"github.com/podkit/podkit/sandbox"
)

// RunPodSandbox creates the pod's namespaces and pins them, sets the
// hostname and sysctls, starts the pause process when the pod shares its
// PID namespace, wires the network and writes the DNS files — step 12 and
// 13 of the birth sequence. On error everything done so far is undone.
func (r *Runtime) RunPodSandbox(ctx context.Context, cfg *sandbox.SandboxConfig) (*sandbox.Sandbox, error) {
	if cfg == nil || cfg.Pod.Name == "" || cfg.Pod.Namespace == "" || cfg.Pod.UID == "" {
		return nil, fmt.Errorf("sandbox config needs the pod's name, namespace and uid: %w", sandbox.ErrInvalid)
	}
	if _, err := r.handler(cfg.RuntimeHandler); err != nil {
		return nil, err
	}
	netSys, ipcSys, err := splitSysctls(cfg.Sysctls)
	if err != nil {
		return nil, fmt.Errorf("sandbox for pod %s/%s: %w: %w", cfg.Pod.Namespace, cfg.Pod.Name, err, sandbox.ErrInvalid)
	}
	unlock, err := r.busy.lock(ctx, "pod/"+cfg.Pod.UID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r.mu.Lock()
	for _, s := range r.sandboxes {
		if s.Config.Pod.UID == cfg.Pod.UID && s.Config.Pod.Attempt == cfg.Pod.Attempt {
			r.mu.Unlock()
			return nil, fmt.Errorf("sandbox for pod %s/%s attempt %d is %s: %w", cfg.Pod.Namespace, cfg.Pod.Name, cfg.Pod.Attempt, s.ID, sandbox.ErrAlreadyExists)
		}
	}
	r.mu.Unlock()

	rec := &sandboxRecord{ID: newID(), Config: *cfg, State: sandbox.SandboxNotReady, CreatedAt: r.now()}
	dir := r.sandboxDir(rec.ID)
	if err := os.MkdirAll(filepath.Join(dir, "ns"), 0o711); err != nil {
		return nil, fmt.Errorf("sandbox dir: %w", err)
	}
	if err := r.saveSandbox(rec); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := r.setupSandbox(ctx, rec, netSys, ipcSys); err != nil {
		if rerr := r.removeSandbox(context.WithoutCancel(ctx), rec.ID); rerr != nil {
			r.log.Error("cleaning up a failed sandbox", "sandbox", rec.ID, "err", rerr)
		}
		return nil, fmt.Errorf("run sandbox for pod %s/%s: %w", cfg.Pod.Namespace, cfg.Pod.Name, err)
	}
	return rec.public(), nil
}

func (r *Runtime) setupSandbox(ctx context.Context, rec *sandboxRecord, netSys, ipcSys map[string]string) error {
	cfg, dir := &rec.Config, r.sandboxDir(rec.ID)
	t0 := time.Now()
	var tNS, tNet time.Time
	defer func() {
		if r.log.Enabled(ctx, slog.LevelDebug) && !tNet.IsZero() {
			r.log.Debug("sandbox ready", "sandbox", rec.ID, "namespaces", tNS.Sub(t0), "network", tNet.Sub(tNS), "files", time.Since(tNet))
		}
	}()
	nsDir := filepath.Join(dir, "ns")
	if !cfg.HostNetwork {
		ns, err := netns.New(nsDir, "net")
		if err != nil {
			return err
		}
		// No record write per namespace: cleanupSandboxDir finds what a
		// half-made sandbox pinned by looking at its directory.
		rec.NetNS = ns.Path()
		host := cfg.Hostname
		if host == "" {
			host = cfg.Pod.Name
		}
		if err := pin(filepath.Join(nsDir, "uts"), utsNS, func() error { return unix.Sethostname([]byte(host)) }); err != nil {
			return err
		}
		rec.UTSNS = filepath.Join(nsDir, "uts")
		if err := setNetSysctls(rec.NetNS, netSys); err != nil {
			return err
		}
	} else if len(netSys) > 0 {
		return fmt.Errorf("net.* sysctls with hostNetwork: %w", sandbox.ErrInvalid)
	}
	if !cfg.HostIPC {
		if err := pin(filepath.Join(nsDir, "ipc"), ipcNS, func() error { return writeSysctls(ipcSys) }); err != nil {
			return err
		}
		rec.IPCNS = filepath.Join(nsDir, "ipc")
		if err := mountShm(filepath.Join(dir, "shm")); err != nil {
			return err
		}
		rec.Shm = filepath.Join(dir, "shm")
	} else if len(ipcSys) > 0 {
		return fmt.Errorf("IPC sysctls with hostIPC: %w", sandbox.ErrInvalid)
	}
	if (cfg.SharePID || r.cfg.PauseAlways) && !cfg.HostPID {
		if err := r.startPause(ctx, rec); err != nil {
			return err
		}
	}
	tNS = time.Now()
	if rec.NetNS != "" {
		if r.cfg.Network != nil {
			res, err := r.cfg.Network.Setup(ctx, &cni.Attachment{
				ContainerID: rec.ID, NetNS: rec.NetNS,
				Pod: types.NamespacedName{Namespace: cfg.Pod.Namespace, Name: cfg.Pod.Name},
			})
			rec.NetworkUp = true // a failed Setup may leave parts: Teardown them too
			if err != nil {
				r.saveSandbox(rec)
				return fmt.Errorf("network: %w", err)
			}
			for _, ip := range res.PodIPs() {
				rec.IPs = append(rec.IPs, ip.String())
			}
		} else if err := loopbackUp(rec.NetNS); err != nil {
			return err
		}
	}
	tNet = time.Now()
	for name, data := range map[string][]byte{"resolv.conf": cfg.ResolvConf, "hosts": cfg.Hosts, "hostname": cfg.HostnameFile} {
		if data == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	rec.State = sandbox.SandboxReady
	return r.saveSandbox(rec)
}

// StopPodSandbox kills the sandbox's containers and tears its network
// down; the namespaces stay until RemovePodSandbox.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	unlock, err := r.busy.lock(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := r.getSandbox(id); err != nil {
		return err
	}
	return r.stopSandbox(ctx, id)
}

func (r *Runtime) stopSandbox(ctx context.Context, id string) error {
	rec, err := r.getSandbox(id)
	if errors.Is(err, sandbox.ErrNotFound) {
		return nil
	}
	for _, cid := range r.containersOf(id) {
		if err := r.stopContainer(ctx, cid, 0); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			return fmt.Errorf("stop sandbox %s: %w", id, err)
		}
	}
	if rec.NetworkUp && r.cfg.Network != nil {
		err := r.cfg.Network.Teardown(ctx, &cni.Attachment{
			ContainerID: rec.ID, NetNS: rec.NetNS,
			Pod: types.NamespacedName{Namespace: rec.Config.Pod.Namespace, Name: rec.Config.Pod.Name},
		})
		if err != nil {
			return fmt.Errorf("stop sandbox %s: network teardown: %w", id, err)
		}
		rec.NetworkUp = false
	}
	if rec.PauseTask != "" {
		if err := r.killTask(ctx, rec.PauseTask); err != nil {
			return fmt.Errorf("stop sandbox %s: pause: %w", id, err)
		}
	}
	rec.State = sandbox.SandboxNotReady
	return r.saveSandbox(rec)
}

// RemovePodSandbox stops the sandbox, removes its containers, unpins its
// namespaces and deletes its state.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	unlock, err := r.busy.lock(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	return r.removeSandbox(ctx, id)
}

func (r *Runtime) removeSandbox(ctx context.Context, id string) error {
	if _, err := r.getSandbox(id); errors.Is(err, sandbox.ErrNotFound) {
		return nil
	}
	if err := r.stopSandbox(ctx, id); err != nil {
		return err
	}
	for _, cid := range r.containersOf(id) {
		if err := r.removeContainer(ctx, cid); err != nil {
			return fmt.Errorf("remove sandbox %s: %w", id, err)
		}
	}
	rec, err := r.getSandbox(id)
	if err != nil {
		return nil
	}
	if rec.PauseTask != "" {
		if err := r.deleteTask(ctx, rec.PauseTask); err != nil {
			return fmt.Errorf("remove sandbox %s: pause: %w", id, err)
		}
	}
	if err := r.cleanupSandboxDir(ctx, r.sandboxDir(id)); err != nil {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	r.mu.Lock()
	delete(r.sandboxes, id)
	r.mu.Unlock()
	return nil
}

// cleanupSandboxDir unpins the namespaces, unmounts /dev/shm and deletes
// the directory. It works on half-made directories too.
func (r *Runtime) cleanupSandboxDir(_ context.Context, dir string) error {
	var errs []error
	nsDir := filepath.Join(dir, "ns")
	if _, err := os.Stat(filepath.Join(nsDir, "net")); err == nil {
		if err := netns.Remove(filepath.Join(nsDir, "net")); err != nil {
			errs = append(errs, err)
		}
	}
	for _, n := range []string{"ipc", "uts"} {
		if err := unpin(filepath.Join(nsDir, n)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := unmountAll(filepath.Join(dir, "shm")); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

func (s *sandboxRecord) public() *sandbox.Sandbox {
	out := &sandbox.Sandbox{
		ID: s.ID, Pod: s.Config.Pod, State: s.State, CreatedAt: s.CreatedAt,
		NetNS: s.NetNS, PausePID: s.PausePID, RuntimeHandler: s.Config.RuntimeHandler,
		Labels: s.Config.Labels, Annotations: s.Config.Annotations,
	}
	for _, ip := range s.IPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			out.IPs = append(out.IPs, a)
		}
	}
	return out
}
