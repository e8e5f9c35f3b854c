package inproc_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/internal/inproc"
)

// BenchmarkRoundTrip measures the transport alone: a write whose handler
// reads a 6 KB body and answers 6 KB, read by the client as client-go does.
func BenchmarkRoundTrip(b *testing.B) {
	payload := bytes.Repeat([]byte("x"), 6<<10)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			b.Error(err)
		}
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(payload)
	})
	rt := inproc.Transport(h)
	for b.Loop() {
		req, err := http.NewRequest(http.MethodPost, "http://x/api/v1/namespaces/default/pods", bytes.NewReader(payload))
		if err != nil {
			b.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}

// BenchmarkClientGoCreate is a client-go create against the reference API
// server through the transport.
func BenchmarkClientGoCreate(b *testing.B) {
	c := newClient(b)
	cms := c.CoreV1().ConfigMaps("default")
	ctx := b.Context()
	i := 0
	for b.Loop() {
		i++
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": "v"}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
