package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/storage"
)

// Helpers of the ownership tests (storage.OwningWriter on the write
// paths): a server over a given store with a hook for admission, requests
// straight to its handler, and a pod rich enough that a copy of it shows.

// hookAdmission calls admit (when set) on every Admit.
type hookAdmission struct {
	mu    sync.Mutex
	admit func(a *admission.Attributes) error
}

func (h *hookAdmission) Admit(_ context.Context, a *admission.Attributes) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.admit == nil {
		return nil
	}
	return h.admit(a)
}

func (*hookAdmission) Validate(context.Context, *admission.Attributes) error { return nil }

// set replaces the hook.
func (h *hookAdmission) set(admit func(a *admission.Attributes) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.admit = admit
}

// newOwnershipServer is a bootstrapped server over st with admission hook.
func newOwnershipServer(t testing.TB, st storage.Store, hook *hookAdmission) *Server {
	t.Helper()
	cfg := Config{Store: st, Logger: slog.New(slog.DiscardHandler)}
	if hook != nil {
		cfg.Admission = hook
	}
	s, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Bootstrap(context.Background()))
	return s
}

// call sends one request to h and returns the recorded response.
func call(h http.Handler, method, path, contentType string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// mustCall is call requiring status code want.
func mustCall(t testing.TB, h http.Handler, method, path, contentType string, body []byte, want int) *httptest.ResponseRecorder {
	t.Helper()
	rec := call(h, method, path, contentType, body)
	require.Equal(t, want, rec.Code, "%s %s: %s", method, path, rec.Body.String())
	return rec
}

// asJSON encodes obj with its apiVersion and kind, as a client sends it.
func asJSON(t testing.TB, obj runtime.Object, apiVersion, kind string) []byte {
	t.Helper()
	obj.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	return data
}

// ownershipPod is a pod with what a Deployment's pod carries (labels,
// two containers with resources, env, ports and a probe, an owner).
func ownershipPod(name string) *corev1.Pod {
	res := func(cpu, mem string) corev1.ResourceRequirements {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		return corev1.ResourceRequirements{Requests: l, Limits: l}
	}
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels:      map[string]string{"app": "shop", "pod-template-hash": "6d8f9c7b5d"},
			Annotations: map[string]string{"example.com/owner": "team-a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "shop-6d8f9c7b5d",
				UID: "0b7c6f0e-1d2a-4c53-9a52-6f1d5b1c1e01", Controller: &yes}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{
				Name: "web", Image: "registry.local/shop/web:1.4.2",
				Args:      []string{"--listen=:8080"},
				Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				Env:       []corev1.EnvVar{{Name: "MODE", Value: "production"}},
				Resources: res("100m", "128Mi"),
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")},
				}},
			},
			{Name: "proxy", Image: "registry.local/mesh/proxy:2.1.0", Resources: res("50m", "64Mi")},
		}},
	}
}

const podsPath = "/api/v1/namespaces/default/pods"

// podKey is the store key of pod name in namespace default.
func podKey(name string) string {
	return storage.Key(schema.GroupResource{Resource: "pods"}, "default", name)
}

// sharedPod returns the store's own object of pod name.
func sharedPod(t testing.TB, st storage.Store, name string) *corev1.Pod {
	t.Helper()
	obj, err := st.(storage.SharedReader).GetShared(context.Background(), podKey(name))
	require.NoError(t, err)
	return obj.(*corev1.Pod)
}
