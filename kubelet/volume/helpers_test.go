package volume

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// fakeMounter records mounts instead of asking the kernel, so that all but
// the kernel itself is tested without root.
type fakeMounter struct {
	mu     sync.Mutex
	mounts map[string]fakeMount
	// sticky mount points survive unmount (a mount that will not go).
	sticky map[string]bool
}

type fakeMount struct {
	fstype string // "tmpfs" or "bind"
	source string // bind: the path the fd pointed at
	size   int64
}

var _ mounter = (*fakeMounter)(nil)

func newFakeMounter() *fakeMounter {
	return &fakeMounter{mounts: map[string]fakeMount{}, sticky: map[string]bool{}}
}

func (f *fakeMounter) mountTmpfs(target string, size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mounts[target] = fakeMount{fstype: "tmpfs", size: size}
	return nil
}

func (f *fakeMounter) bindFD(fd int, target string) error {
	src, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mounts[target] = fakeMount{fstype: "bind", source: src}
	return nil
}

func (f *fakeMounter) unmount(target string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.sticky[target] {
		delete(f.mounts, target)
	}
	return nil
}

func (f *fakeMounter) isMountPoint(p string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.mounts[p]
	return ok, nil
}

func (f *fakeMounter) mountsUnder(dir string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for p := range f.mounts {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return deepestFirst(out), nil
}

func (f *fakeMounter) get(target string) (fakeMount, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.mounts[target]
	return m, ok
}

// fixedClock returns t0, then later times when advanced.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fixedClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type testEnv struct {
	m      *Manager
	mnt    *fakeMounter
	client *fake.Clientset
	clock  *fixedClock
	dir    string
}

// newTestManager returns a Manager on a temporary PodsDir with a fake
// clientset holding objs and a recording mounter.
func newTestManager(t *testing.T, objs ...runtime.Object) *testEnv {
	t.Helper()
	env := &testEnv{
		mnt:    newFakeMounter(),
		client: fake.NewClientset(objs...),
		clock:  &fixedClock{t: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)},
		dir:    filepath.Join(t.TempDir(), "pods"),
	}
	m, err := New(Config{PodsDir: env.dir, Client: env.client, NodeName: "node-a", Clock: env.clock.now})
	require.NoError(t, err)
	m.mnt = env.mnt
	env.m = m
	return env
}

// testPod returns a pod with the given volumes and one container "app".
func testPod(vols ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID("uid-1234")},
		Spec: corev1.PodSpec{
			NodeName: "node-a",
			Volumes:  vols,
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "busybox",
			}},
		},
	}
}

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: data}
}

func secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// modeOf is the permission bits of p, following symlinks.
func modeOf(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Mode().Perm()
}

// dataDirs lists the timestamped directories in an atomically written dir.
func dataDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "..") {
			out = append(out, e.Name())
		}
	}
	return out
}
