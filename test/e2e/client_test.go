package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// apiTimeout bounds one client-go call.
const apiTimeout = 15 * time.Second

// podManifest is testdata/pod.yaml, the realistic nginx pod.
const podManifest = "testdata/pod.yaml"

// loadPod decodes a pod manifest from testdata.
func loadPod(t *testing.T, path string) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(filepath.FromSlash(path))
	require.NoError(t, err)
	pod := &corev1.Pod{}
	require.NoError(t, yaml.UnmarshalStrict(data, pod), "decoding %s", path)
	return pod
}

// createPod creates testdata/pod.yaml in namespace default through
// client-go, so that tests of other verbs do not depend on kubectl apply.
func createPod(t *testing.T, c kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	pod := loadPod(t, podManifest)
	pod.Name = name
	out, err := c.CoreV1().Pods("default").Create(testContext(t, apiTimeout), pod, metav1.CreateOptions{})
	require.NoError(t, err, "creating pod %s", name)
	return out
}

// getPod fetches a pod from namespace default.
func getPod(t *testing.T, c kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	pod, err := c.CoreV1().Pods("default").Get(testContext(t, apiTimeout), name, metav1.GetOptions{})
	require.NoError(t, err, "getting pod %s", name)
	return pod
}

// requirePodGone requires that pod default/name does not exist.
func requirePodGone(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	pod, err := c.CoreV1().Pods("default").Get(testContext(t, apiTimeout), name, metav1.GetOptions{})
	require.Truef(t, apierrors.IsNotFound(err), "pod %s should be gone, got err=%v pod=%+v", name, err, pod)
}

// bindPod binds a pod to a node by POSTing a Binding to pods/binding, as
// kube-scheduler does.
func bindPod(t *testing.T, c kubernetes.Interface, name, node string) {
	t.Helper()
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Target:     corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node},
	}
	require.NoError(t, c.CoreV1().Pods("default").Bind(testContext(t, apiTimeout), b, metav1.CreateOptions{}), "binding %s to %s", name, node)
}

// parseRV parses a resourceVersion; podkit's, like etcd's, are integers
// (clients must not rely on that, but the durability tests compare them).
func parseRV(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	require.NoError(t, err, "resourceVersion %q", rv)
	return n
}

// eventually polls cond every 50ms until it holds or timeout passes, then
// fails with the last explanation cond gave.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s", timeout, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
