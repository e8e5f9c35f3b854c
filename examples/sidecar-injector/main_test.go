package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/internal/inproc"
	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/sandbox/native"
)

func TestMain(m *testing.M) {
	native.Init() // the root test runs real containers: re-execs land here
	os.Exit(m.Run())
}

var proxy = corev1.Container{Name: "proxy", Image: "example.com/proxy:1"}

func podWith(annotations map[string]string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Annotations: maps.Clone(annotations)}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "app:1"})
	}
	return p
}

func TestInjectorAdmit(t *testing.T) {
	inject := map[string]string{InjectAnnotation: "true"}
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	for _, tc := range []struct {
		name       string
		resource   schema.GroupVersionResource
		sub        string
		obj        runtime.Object
		containers []string // nil: the object is not a pod and stays as it is
		status     string
	}{
		{"annotated pod gets the sidecar", pods, "", podWith(inject, "app"), []string{"app", "proxy"}, "injected"},
		{"pod without the annotation is left alone", pods, "", podWith(nil, "app"), []string{"app"}, ""},
		{"annotation other than true", pods, "", podWith(map[string]string{InjectAnnotation: "false"}, "app"), []string{"app"}, ""},
		{"a sidecar already there is not added twice", pods, "", podWith(inject, "app", "proxy"), []string{"app", "proxy"}, ""},
		{"subresources are ignored", pods, "status", podWith(inject, "app"), []string{"app"}, ""},
		{"other resources are ignored", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "", &appsv1.Deployment{}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &Injector{Sidecar: proxy}
			require.NoError(t, in.Admit(t.Context(), &admission.Attributes{Operation: admission.Create, Resource: tc.resource, Subresource: tc.sub, Object: tc.obj}))
			pod, ok := tc.obj.(*corev1.Pod)
			if tc.containers == nil {
				assert.False(t, ok)
				return
			}
			assert.Equal(t, tc.containers, containerNames(pod))
			assert.Equal(t, tc.status, pod.Annotations[StatusAnnotation])
		})
	}
	in := &Injector{Sidecar: proxy}
	assert.True(t, in.Handles(admission.Create))
	assert.False(t, in.Handles(admission.Update), "a running pod's containers never change")
	err := (&Injector{Sidecar: corev1.Container{Name: "proxy"}}).Admit(t.Context(), &admission.Attributes{Operation: admission.Create, Resource: pods, Object: podWith(inject, "app")})
	assert.ErrorContains(t, err, "no sidecar image")
}

// The injector in the reference API server's chain: the created pod comes
// back with a defaulted, valid sidecar; quota and the other built-ins still
// run; other pods are untouched.
func TestInjectorInAPIServer(t *testing.T) {
	ctx := t.Context()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	cfg, err := app.DefaultConfig(st, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, WithInjector(&Injector{Sidecar: proxy})(cfg))
	srv, err := apiserver.New(*cfg)
	require.NoError(t, err)
	require.NoError(t, srv.Bootstrap(ctx))
	client := kubernetes.NewForConfigOrDie(inproc.RESTConfig(srv.Handler()))

	got, err := client.CoreV1().Pods("default").Create(ctx, podWith(map[string]string{InjectAnnotation: "true"}, "app"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"app", "proxy"}, containerNames(got))
	sc := got.Spec.Containers[1]
	assert.Equal(t, corev1.PullIfNotPresent, sc.ImagePullPolicy, "the sidecar is defaulted after injection")
	assert.Equal(t, corev1.TerminationMessageReadFile, sc.TerminationMessagePolicy)
	assert.NotEmpty(t, got.Spec.Tolerations, "the built-in plugins still ran (DefaultTolerationSeconds)")

	plain := podWith(nil, "app")
	plain.Name = "plain"
	got, err = client.CoreV1().Pods("default").Create(ctx, plain, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"app"}, containerNames(got))

	assert.ErrorContains(t, WithInjector(&Injector{})(cfg), "needs a name")
}

// TestRun runs the example program end to end: a real one-node cluster, a
// pod whose sidecar really runs in the pod's network namespace, and a clean
// host afterwards.
func TestRun(t *testing.T) {
	testutil.RequireRoot(t)
	web := filepath.Join(t.TempDir(), "demo-web")
	build := exec.Command("go", "build", "-o", web, "github.com/podkit/podkit/examples/demo-web")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	prefix := "sidecar-" + cnitest.RandomHex(3)
	var stdout strings.Builder
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	err = run(ctx, options{
		DataDir: t.TempDir(), WebBinary: web, NodePrefix: prefix,
		ClusterCIDR: netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", 200+int(cnitest.RandomByte())%20)),
		Out:         &stdout, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err, "output so far:\n%s", stdout.String())
	got := stdout.String()
	assert.Contains(t, got, "created pod web with containers [web proxy] (sidecar.example.com/status=injected)")
	assert.Contains(t, got, "container web running=true")
	assert.Contains(t, got, "container proxy running=true")
	assert.Contains(t, got, "answers: hello from web")
	_, err = netlink.LinkByName(podkit.HostName("pk", prefix+"-1"))
	assert.Error(t, err, "the node's bridge is gone")
	_, err = os.Stat("/sys/fs/cgroup/memory/" + podkit.HostName("podkit-", prefix+"-1"))
	assert.True(t, os.IsNotExist(err), "the node's cgroup tree is gone")
}
