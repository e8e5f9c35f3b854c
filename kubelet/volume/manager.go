package volume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Plugin directory names under <pod>/volumes, as the kubelet names them.
const (
	PluginEmptyDir    = "kubernetes.io~empty-dir"
	PluginConfigMap   = "kubernetes.io~configmap"
	PluginSecret      = "kubernetes.io~secret"
	PluginDownwardAPI = "kubernetes.io~downward-api"
	PluginProjected   = "kubernetes.io~projected"
)

const (
	volumesDirName  = "volumes"
	subPathsDirName = "volume-subpaths"
	// defaultFileMode is the API's default for defaultMode.
	defaultFileMode int32 = 0o644
	// emptyDirPerm is the mode of a fresh emptyDir (and of the directory
	// under an atomically written volume), as in the kubelet.
	emptyDirPerm os.FileMode = 0o777
)

// Errors callers can test for with errors.Is. API lookups that fail with
// NotFound keep the API's error (apierrors.IsNotFound works on them).
var (
	// ErrUnsupported: the volume type (or a medium or projection source)
	// is not implemented by this stage.
	ErrUnsupported = errors.New("unsupported volume type")
	// ErrHostPathType: a hostPath type check failed.
	ErrHostPathType = errors.New("hostPath type check failed")
	// ErrKeyNotFound: a configMap or secret item names a missing key.
	ErrKeyNotFound = errors.New("non-existent key")
	// ErrSubPath: a subPath or subPathExpr is invalid or escapes its volume.
	ErrSubPath = errors.New("invalid subPath")
	// ErrPropagation: a mountPropagation mode is invalid or not allowed.
	ErrPropagation = errors.New("invalid mount propagation")
	// ErrNoTokenSource: a projected serviceAccountToken was asked for but
	// Config.Tokens is nil.
	ErrNoTokenSource = errors.New("no service account token source configured")
	// ErrNoClient: a configMap or secret was asked for but Config.Client is
	// nil.
	ErrNoClient = errors.New("no API client configured")
	// ErrNotSetUp: a volumeMount names a volume that Setup did not prepare.
	ErrNotSetUp = errors.New("volume is not set up")
)

// VolumeError is the error of one volume in Setup. Its message is the one
// the kubelet shows in FailedMount events.
type VolumeError struct {
	Volume string
	Err    error
}

func (e *VolumeError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}

func (e *VolumeError) Unwrap() error { return e.Err }

// Config holds the Manager's collaborators and settings.
type Config struct {
	// PodsDir holds one directory per pod UID (normally <state root>/pods).
	// Required, absolute.
	PodsDir string
	// Client reads ConfigMaps and Secrets. Without it those volumes fail
	// with ErrNoClient.
	Client kubernetes.Interface
	// Tokens issues projected service account tokens. Without it those
	// projections fail with ErrNoTokenSource. See TokenRequester.
	Tokens TokenSource
	// NodeName is spec.nodeName for downward API values when the pod's
	// own is empty.
	NodeName string
	// Allocatable, when set, returns the node's allocatable resources;
	// resourceFieldRef limits that a container leaves unset default to
	// them as in Kubernetes. Nil: unset limits read as 0.
	Allocatable func() corev1.ResourceList
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
	// Clock names the timestamped data directories; defaults to time.Now.
	Clock func() time.Time
}

// Manager prepares and removes pod volumes. It keeps no state in memory
// that the disk does not also hold, so a restarted kubelet picks up where
// the previous one left off. Its methods are safe for concurrent use; calls
// for the same pod are serialised.
type Manager struct {
	podsDir     string
	client      kubernetes.Interface
	tokens      TokenSource
	nodeName    string
	allocatable func() corev1.ResourceList
	log         *slog.Logger
	now         func() time.Time
	mnt         mounter

	mu    sync.Mutex
	locks map[types.UID]*podLock
}

type podLock struct {
	sync.Mutex
	refs int
}

// New returns a Manager and creates Config.PodsDir.
func New(cfg Config) (*Manager, error) {
	if cfg.PodsDir == "" || !filepath.IsAbs(cfg.PodsDir) {
		return nil, fmt.Errorf("volume: PodsDir %q must be an absolute path", cfg.PodsDir)
	}
	if err := os.MkdirAll(cfg.PodsDir, 0o750); err != nil {
		return nil, fmt.Errorf("volume: create pods dir: %w", err)
	}
	// Mount points in mountinfo are real paths: resolve symlinks once so
	// that Teardown finds every mount below a pod.
	podsDir, err := filepath.EvalSymlinks(cfg.PodsDir)
	if err != nil {
		return nil, fmt.Errorf("volume: resolve pods dir: %w", err)
	}
	m := &Manager{
		podsDir:     podsDir,
		client:      cfg.Client,
		tokens:      cfg.Tokens,
		nodeName:    cfg.NodeName,
		allocatable: cfg.Allocatable,
		log:         cfg.Logger,
		now:         cfg.Clock,
		mnt:         newKernelMounter(),
		locks:       map[types.UID]*podLock{},
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m, nil
}

// Setup prepares every volume of pod and returns the host path of each one
// that is ready (volume name → directory, or file for a hostPath file). It is
// idempotent and meant to be called on every sync of the pod: it refreshes
// configMap, secret, downwardAPI and projected contents atomically. Volumes
// that fail do not stop the others; the error joins one *VolumeError per
// failed volume, each worth a FailedMount event.
func (m *Manager) Setup(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	if err := checkPod(pod); err != nil {
		return nil, err
	}
	unlock := m.lock(pod.UID)
	defer unlock()

	paths := make(map[string]string, len(pod.Spec.Volumes))
	var errs []error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if err := ctx.Err(); err != nil {
			return paths, errors.Join(append(errs, err)...)
		}
		p, err := m.setupVolume(ctx, pod, v)
		if err != nil {
			m.log.Debug("volume setup failed", "pod", podName(pod), "volume", v.Name, "err", err)
			errs = append(errs, &VolumeError{Volume: v.Name, Err: err})
			continue
		}
		paths[v.Name] = p
	}
	return paths, errors.Join(errs...)
}

func (m *Manager) setupVolume(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) (string, error) {
	if err := checkName(v.Name); err != nil {
		return "", fmt.Errorf("invalid volume name: %w", err)
	}
	switch {
	case v.EmptyDir != nil:
		return m.setupEmptyDir(pod, v.Name, v.EmptyDir)
	case v.HostPath != nil:
		return setupHostPath(v.HostPath)
	case v.ConfigMap != nil:
		return m.setupConfigMap(ctx, pod, v.Name, v.ConfigMap)
	case v.Secret != nil:
		return m.setupSecret(ctx, pod, v.Name, v.Secret)
	case v.DownwardAPI != nil:
		return m.setupDownwardAPI(pod, v.Name, v.DownwardAPI)
	case v.Projected != nil:
		return m.setupProjected(ctx, pod, v.Name, v.Projected)
	}
	return "", tagf(ErrUnsupported, "unsupported volume type %s", volumeType(&v.VolumeSource))
}

// volumeType names the set field of a VolumeSource by its JSON name
// ("nfs", "persistentVolumeClaim", ...).
func volumeType(src *corev1.VolumeSource) string {
	rv := reflect.ValueOf(src).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return "(none)"
}

// podDir is <PodsDir>/<uid>.
func (m *Manager) podDir(uid types.UID) string {
	return filepath.Join(m.podsDir, string(uid))
}

// volumeDir is <PodsDir>/<uid>/volumes/<plugin>/<name>.
func (m *Manager) volumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(m.podDir(uid), volumesDirName, plugin, name)
}

// lock serialises the Manager's work on one pod.
func (m *Manager) lock(uid types.UID) (unlock func()) {
	m.mu.Lock()
	l := m.locks[uid]
	if l == nil {
		l = &podLock{}
		m.locks[uid] = l
	}
	l.refs++
	m.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		m.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(m.locks, uid)
		}
		m.mu.Unlock()
	}
}

func checkPod(pod *corev1.Pod) error {
	if pod == nil {
		return errors.New("volume: nil pod")
	}
	if err := checkName(string(pod.UID)); err != nil {
		return fmt.Errorf("volume: pod %s has an invalid UID: %w", podName(pod), err)
	}
	return nil
}

// checkName refuses names that cannot be one path component.
func checkName(s string) error {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\x00") {
		return fmt.Errorf("%q is not a valid path component", s)
	}
	return nil
}

func podName(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// taggedError has its own message and matches a sentinel with errors.Is;
// it unwraps to the underlying cause, if any.
type taggedError struct {
	msg string
	tag error
	err error
}

func (e *taggedError) Error() string        { return e.msg }
func (e *taggedError) Is(target error) bool { return target == e.tag }
func (e *taggedError) Unwrap() error        { return e.err }

// tagf formats a message for an error matching tag.
func tagf(tag error, format string, args ...any) error {
	return &taggedError{msg: fmt.Sprintf(format, args...), tag: tag}
}

// tagWrap is tagf for an error with an underlying cause, appended to the
// message.
func tagWrap(tag, cause error, format string, args ...any) error {
	return &taggedError{msg: fmt.Sprintf(format, args...) + ": " + cause.Error(), tag: tag, err: cause}
}
