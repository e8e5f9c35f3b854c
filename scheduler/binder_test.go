package scheduler_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/podkit/podkit/scheduler"
)

// TestAPIBinderRequest: the bind is the POST client-go's Pods().Bind sends
// (path, no query parameters, the Binding with the pod's UID).
func TestAPIBinderRequest(t *testing.T) {
	type seen struct {
		method, path, query string
		binding             corev1.Binding
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b corev1.Binding
		_ = json.Unmarshal(body, &b)
		got <- seen{r.Method, r.URL.Path, r.URL.RawQuery, b}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success","code":201}`))
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"}}
	require.NoError(t, (&scheduler.APIBinder{Client: client}).Bind(context.Background(), pod, "node-1"))
	s := <-got
	assert.Equal(t, http.MethodPost, s.method)
	assert.Equal(t, "/api/v1/namespaces/ns/pods/p/binding", s.path)
	assert.Empty(t, s.query)
	assert.Equal(t, "p", s.binding.Name)
	assert.Equal(t, "uid-1", string(s.binding.UID))
	assert.Equal(t, corev1.ObjectReference{Kind: "Node", Name: "node-1"}, s.binding.Target)
}

// TestAPIBinderWithFakeClientset: clientsets without a REST client (fakes)
// bind through the typed client.
func TestAPIBinderWithFakeClientset(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"}}
	client := fake.NewClientset(pod)
	require.NoError(t, (&scheduler.APIBinder{Client: client}).Bind(context.Background(), pod, "node-1"))
	var bound bool
	for _, a := range client.Actions() {
		if c, ok := a.(clienttesting.CreateAction); ok && a.GetSubresource() == "binding" {
			bound = c.GetObject().(*corev1.Binding).Target.Name == "node-1"
		}
	}
	assert.True(t, bound, "actions: %v", client.Actions())
}
