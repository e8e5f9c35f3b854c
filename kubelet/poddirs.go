package kubelet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// The pod's files on the node: its state directory RootDir/pods/<uid>
// (volumes, plugins, containers/<name>/<termination log>, etc-hosts) and
// its log directory LogDir/<ns>_<name>_<uid>/<container>/<n>.log, made
// as the kubelet's makePodDataDirs and the runtime's log directories are.
//
// Creating a file costs far more than looking one up (a hundred times
// more on some disks), and every pod creates several, so the first sync of
// a pod creates each directory with one mkdir below its known parent
// instead of walking the path as MkdirAll does, and remembers what it made
// itself: files it never wrote in a directory it just created need no
// read before they are written, and no check that they exist after.

// podDir is the pod's state directory, RootDir/pods/<uid>.
func (k *Kubelet) podDir(pod *corev1.Pod) string {
	return filepath.Join(k.cfg.RootDir, "pods", string(pod.UID))
}

// podLogDir is the pod's log directory, LogDir/<ns>_<name>_<uid>.
func (k *Kubelet) podLogDir(pod *corev1.Pod) string {
	return filepath.Join(k.cfg.LogDir, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}

// podPaths are a pod's directories and etc-hosts file.
type podPaths struct {
	dir, logDir, etcHosts string
}

// pathsOf returns the pod's paths, worked out once per worker.
func (k *Kubelet) pathsOf(st *podState, pod *corev1.Pod) *podPaths {
	if st.files.dir == "" {
		dir := k.podDir(pod)
		st.files = podPaths{dir: dir, logDir: k.podLogDir(pod), etcHosts: filepath.Join(dir, "etc-hosts")}
	}
	return &st.files
}

// makePodDirs creates the pod's state directories (volumes, plugins,
// containers) and its log directory, 0750. A worker's first sync makes
// each with one mkdir and notes whether it created the pod and log
// directories; later syncs check them as MkdirAll does (and make them
// again if they were removed).
func (k *Kubelet) makePodDirs(st *podState, pod *corev1.Pod) error {
	paths := k.pathsOf(st, pod)
	podDir, logDir := paths.dir, paths.logDir
	dirs := [...]string{
		podDir,
		filepath.Join(podDir, "volumes"),
		filepath.Join(podDir, "plugins"),
		filepath.Join(podDir, "containers"),
		logDir,
	}
	if st.dirsMade {
		for _, d := range dirs[1:] {
			if err := os.MkdirAll(d, 0o750); err != nil {
				return fmt.Errorf("creating %s: %w", d, err)
			}
		}
		return nil
	}
	for i, d := range dirs {
		created, err := mkdir(d, 0o750)
		if err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
		switch i {
		case 0:
			st.newPodDir = created
		case len(dirs) - 1:
			st.newLogDir = created
		}
	}
	st.dirsMade = true
	return nil
}

// mkdir makes directory d with perm, as os.MkdirAll does (an existing
// directory is fine, a missing parent is made too), in one system call
// when its parent exists and it does not. created says it did not exist.
func mkdir(d string, perm os.FileMode) (created bool, err error) {
	err = os.Mkdir(d, perm)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist): // a missing parent
		err = os.MkdirAll(d, perm)
		return err == nil, err
	default: // MkdirAll accepts a directory and reports anything else
		return false, os.MkdirAll(d, perm)
	}
}
