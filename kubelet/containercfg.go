package kubelet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/cgroups"
	"github.com/podkit/podkit/internal/regfile"
	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox"
)

// containerConfig resolves a container of the pod into the runtime's
// configuration: environment, command, security, volume mounts plus the
// kubelet's own (/etc/hosts, the termination log), resources, and last the
// rootfs snapshot (so a failure before leaves nothing to clean).
func (k *Kubelet) containerConfig(ctx context.Context, w *podWorker, pod *corev1.Pod, sb *sandbox.Sandbox, c *corev1.Container,
	isInit bool, attempt uint32, img imageInfo) (*sandbox.ContainerConfig, error) {
	env, err := k.makeEnv(ctx, pod, c, sb)
	if err != nil {
		return nil, err
	}
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	sec := securityConfig(pod, c)
	if err := verifyRunAsNonRoot(pod, c, sec, img.config.User); err != nil {
		return nil, err
	}
	mounts, err := k.volumes.Mounts(pod, c, w.st.paths)
	if err != nil {
		return nil, err
	}
	mounts = k.addEtcHosts(&w.st, pod, c, mounts)
	anns := containerAnnotations(pod, c, attempt, isInit)
	if c.TerminationMessagePath != "" {
		p, err := k.createTerminationLog(k.pathsOf(&w.st, pod).dir, c, attempt)
		if err != nil {
			return nil, err
		}
		anns[AnnotationTerminationLog] = p
		mounts = append(mounts, sandbox.Mount{ContainerPath: c.TerminationMessagePath, HostPath: p})
	}
	if err := makeAttemptDir(filepath.Join(k.pathsOf(&w.st, pod).logDir, c.Name), 0o755, attempt); err != nil {
		k.releaseContainerFiles(ctx, anns)
		return nil, fmt.Errorf("creating the log directory of container %s: %w", c.Name, err)
	}
	rootfs, key, err := k.prepareRootfs(ctx, pod, c, attempt, img)
	if err != nil {
		k.releaseContainerFiles(ctx, anns)
		return nil, err
	}
	if key != "" {
		anns[AnnotationSnapshotKey] = key
	}
	cfg := &sandbox.ContainerConfig{
		Name:        c.Name,
		Attempt:     attempt,
		Image:       c.Image,
		ImageID:     img.id,
		ImageConfig: img.config,
		Rootfs:      rootfs,
		Command:     expandAll(c.Command, vars),
		Args:        expandAll(c.Args, vars),
		WorkingDir:  c.WorkingDir,
		Mounts:      mounts,
		Resources:   k.containerResources(c),
		Security:    sec,
		LogPath:     c.Name + "/" + strconv.FormatUint(uint64(attempt), 10) + ".log",
		Labels:      containerLabels(pod, c),
		Annotations: anns,
	}
	for _, e := range env {
		cfg.Env = append(cfg.Env, e.Name+"="+e.Value)
	}
	return cfg, nil
}

// containerLogDir is where a container's attempts log.
func (k *Kubelet) containerLogDir(pod *corev1.Pod, name string) string {
	return filepath.Join(k.podLogDir(pod), name)
}

// containerResourcer is implemented by Cgroups that map container limits
// themselves (*cgroups.Tree knows the host's cgroup version).
type containerResourcer interface {
	ContainerResources(c *corev1.Container) *specs.LinuxResources
}

func (k *Kubelet) containerResources(c *corev1.Container) *specs.LinuxResources {
	if r, ok := k.cgroups.(containerResourcer); ok {
		return r.ContainerResources(c)
	}
	return cgroups.ContainerResources(c, cgroups.ContainerOptions{EnforceCPULimits: true})
}

// addEtcHosts mounts the kubelet-managed hosts file at /etc/hosts, unless
// the container mounts something there itself, once it exists (this sync
// wrote it or found it current: no need to look).
func (k *Kubelet) addEtcHosts(st *podState, pod *corev1.Pod, c *corev1.Container, mounts []sandbox.Mount) []sandbox.Mount {
	for _, vm := range c.VolumeMounts {
		if filepath.Clean(vm.MountPath) == "/etc/hosts" {
			return mounts
		}
	}
	p := k.pathsOf(st, pod).etcHosts
	if !st.hostsChecked {
		if _, err := os.Stat(p); err != nil {
			return mounts
		}
	}
	return append(mounts, sandbox.Mount{ContainerPath: "/etc/hosts", HostPath: p})
}

// createTerminationLog creates the empty, world-writable file bound at the
// container's terminationMessagePath, unique per attempt.
func (k *Kubelet) createTerminationLog(podDir string, c *corev1.Container, attempt uint32) (string, error) {
	dir := filepath.Join(podDir, "containers", c.Name)
	if err := makeAttemptDir(dir, 0o750, attempt); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	p := filepath.Join(dir, hex.EncodeToString(b[:]))
	f, err := regfile.Open(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return "", fmt.Errorf("creating the termination log of container %s: %w", c.Name, err)
	}
	// The umask applied at creation; the container may run as anyone.
	err = f.Chmod(0o666)
	if cerr := f.Close(); cerr != nil && err == nil {
		return "", cerr
	}
	if err != nil {
		return "", fmt.Errorf("making %s writable: %w", p, err)
	}
	return p, nil
}

// makeAttemptDir makes a directory of a container's attempts (as
// os.MkdirAll): the first attempt's most likely does not exist yet (one
// mkdir below its parent), later attempts' most likely does (one lookup).
func makeAttemptDir(dir string, perm os.FileMode, attempt uint32) error {
	if attempt == 0 {
		_, err := mkdir(dir, perm)
		return err
	}
	return os.MkdirAll(dir, perm)
}

// snapshotKey names a container attempt's rootfs snapshot.
func snapshotKey(pod *corev1.Pod, c *corev1.Container, attempt uint32) string {
	return fmt.Sprintf("podkit/%s/%s/%d", pod.UID, c.Name, attempt)
}

// prepareRootfs prepares the attempt's writable snapshot over the unpacked
// image; a leftover of the same key (a kubelet that died before creating
// the container) is replaced.
func (k *Kubelet) prepareRootfs(ctx context.Context, pod *corev1.Pod, c *corev1.Container, attempt uint32, img imageInfo) ([]overlay.Mount, string, error) {
	if k.snapshots == nil {
		return nil, "", nil
	}
	key := snapshotKey(pod, c, attempt)
	mounts, err := k.snapshots.Prepare(ctx, key, img.chainID)
	if errors.Is(err, overlay.ErrAlreadyExists) {
		if rerr := k.snapshots.Remove(ctx, key); rerr != nil {
			return nil, "", fmt.Errorf("removing stale snapshot %s: %w", key, rerr)
		}
		mounts, err = k.snapshots.Prepare(ctx, key, img.chainID)
	}
	if err != nil {
		return nil, "", fmt.Errorf("preparing the rootfs of container %s: %w", c.Name, err)
	}
	return mounts, key, nil
}

// releaseContainerFiles removes a container's snapshot and termination log,
// named by its annotations (after RemoveContainer, or a failed create).
func (k *Kubelet) releaseContainerFiles(ctx context.Context, anns map[string]string) {
	if key := anns[AnnotationSnapshotKey]; key != "" && k.snapshots != nil {
		if err := k.snapshots.Remove(ctx, key); err != nil {
			k.log.Warn("removing a container snapshot", "key", key, "err", err)
		}
	}
	if p := anns[AnnotationTerminationLog]; p != "" {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			k.log.Warn("removing a termination log", "path", p, "err", err)
		}
	}
}
