package kubelet

import (
	"context"
	"crypto/md5" //nolint:gosec // a name, as the kubelet's static pod UIDs, not a security hash
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/podkit/podkit/apiserver/defaults"
)

// Annotations of static and mirror pods, as Kubernetes names them.
const (
	AnnotationConfigSource = "kubernetes.io/config.source"
	AnnotationConfigMirror = "kubernetes.io/config.mirror"
	AnnotationConfigHash   = "kubernetes.io/config.hash"
	AnnotationConfigSeen   = "kubernetes.io/config.seen"
	// ConfigSourceFile is config.source of pods from StaticPodDir.
	ConfigSourceFile = "file"
)

// isStaticPod says the pod comes from a manifest, not the API server.
func isStaticPod(pod *corev1.Pod) bool {
	src, ok := pod.Annotations[AnnotationConfigSource]
	return ok && src != "api"
}

// isMirrorPod says the API pod mirrors a static pod.
func isMirrorPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[AnnotationConfigMirror]
	return ok
}

// staticSource reads static pod manifests (YAML or JSON, one pod per file,
// hidden files skipped) from StaticPodDir every StaticPodInterval. Each
// becomes a pod named <name>-<node> whose UID is a hash of the file's
// content, path and the node, so a changed file is a new pod (the old one
// is stopped) and an unchanged one keeps its UID across kubelet restarts.
// A file that disappears, or no longer decodes, stops its pod.
type staticSource struct {
	k  *Kubelet
	mu sync.Mutex
	// pods by manifest path.
	pods map[string]*corev1.Pod
	done atomic.Bool
}

func newStaticSource(k *Kubelet) *staticSource {
	return &staticSource{k: k, pods: map[string]*corev1.Pod{}}
}

// loaded says the directory has been read once.
func (s *staticSource) loaded() bool { return s.done.Load() }

// run reads the directory now and every interval until ctx ends.
func (s *staticSource) run(ctx context.Context) {
	s.scan()
	t := s.k.clock.NewTicker(s.k.cfg.StaticPodInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			s.scan()
		}
	}
}

// scan reads every manifest and tells the workers what changed.
func (s *staticSource) scan() {
	k := s.k
	found := map[string]*corev1.Pod{}
	ents, err := os.ReadDir(k.cfg.StaticPodDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		k.log.Warn("reading the static pod directory", "dir", k.cfg.StaticPodDir, "err", err)
		return // keep what runs rather than stop everything
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || e.IsDir() {
			continue
		}
		path := filepath.Join(k.cfg.StaticPodDir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			k.log.Warn("reading a static pod manifest", "path", path, "err", err)
			continue
		}
		pod, err := decodeStaticPod(b, path, k.cfg.NodeName, k.clock.Now())
		if err != nil {
			k.log.Warn("could not process a static pod manifest", "path", path, "err", err)
			continue
		}
		found[path] = pod
	}

	s.mu.Lock()
	old := s.pods
	s.pods = found
	s.mu.Unlock()
	paths := make([]string, 0, len(found))
	for p := range found {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for path, prev := range old {
		if cur := found[path]; cur == nil || cur.UID != prev.UID {
			k.workers.remove(prev.UID)
		}
	}
	for _, path := range paths {
		pod := found[path]
		if prev := old[path]; prev != nil && prev.UID == pod.UID {
			continue
		}
		k.workers.update(pod, true)
	}
	s.done.Store(true)
}

// decodeStaticPod turns a manifest into the pod the kubelet runs:
// API defaults applied, namespace "default" unless given, the node's name
// appended to the pod's, bound to the node, a toleration of every NoExecute
// taint, and the config annotations.
func decodeStaticPod(b []byte, path, node string, now time.Time) (*corev1.Pod, error) {
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(b, &pod); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	if pod.Kind != "" && pod.Kind != "Pod" {
		return nil, fmt.Errorf("%s: kind %q is not Pod", path, pod.Kind)
	}
	if pod.Name == "" {
		return nil, fmt.Errorf("%s: the pod has no name", path)
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, fmt.Errorf("%s: the pod has no containers", path)
	}
	defaults.Pod(&pod)
	if pod.UID == "" {
		h := md5.New() //nolint:gosec // see the import
		h.Write(b)
		fmt.Fprintf(h, "host:%s", node)
		fmt.Fprintf(h, "file:%s", path)
		pod.UID = types.UID(hex.EncodeToString(h.Sum(nil)))
	}
	pod.Name = pod.Name + "-" + node
	if pod.Namespace == "" {
		pod.Namespace = corev1.NamespaceDefault
	}
	pod.Spec.NodeName = node
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationConfigHash] = string(pod.UID)
	pod.Annotations[AnnotationConfigSource] = ConfigSourceFile
	pod.Annotations[AnnotationConfigSeen] = now.Format(time.RFC3339Nano)
	tol := corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	has := false
	for _, t := range pod.Spec.Tolerations {
		has = has || t == tol
	}
	if !has {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, tol)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
	return &pod, nil
}
