package main

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver/app"
)

type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// startAPIServer runs podkit's API server (memory store, default
// admission plugins) on a free port.
func startAPIServer(t *testing.T) (kubernetes.Interface, *warnings) {
	t.Helper()
	opts := app.DefaultOptions()
	opts.Store, opts.Port, opts.DataDir = app.StoreMemory, 0, t.TempDir()
	opts.Secure.Insecure = true
	opts.Logger = slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := app.New(ctx, opts)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	w := &warnings{}
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1, WarningHandler: w})
	require.NoError(t, err)
	return c, w
}

// startWebhook serves the injector on 127.0.0.1 and returns its URL and CA.
func startWebhook(t *testing.T) (string, []byte) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cert, err := NewServingCert("127.0.0.1")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = Serve(ctx, l, cert.TLS, &Injector{Sidecar: DefaultSidecar()}) }()
	t.Cleanup(func() { cancel(); <-done })
	return "https://" + l.Addr().String() + "/mutate", cert.CAPEM
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
}

func containerNames(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

// waitForWebhooks waits until a dry-run pod create gets through admission
// as ok wants: the API server applies a webhook configuration once its
// cache has seen it, a moment after the write, as Kubernetes does.
func waitForWebhooks(t *testing.T, c kubernetes.Interface, ok func(p *corev1.Pod, err error) bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		p, err := c.CoreV1().Pods("default").Create(context.Background(), pod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return ok(p, err)
	}, 30*time.Second, 10*time.Millisecond, "the API server did not apply the webhook configuration")
}

func TestWebhookInjectsSidecar(t *testing.T) {
	ctx := context.Background()
	c, warn := startAPIServer(t)
	url, ca := startWebhook(t)
	require.NoError(t, Register(ctx, c, Configuration(url, ca, admissionregistrationv1.Fail)))
	waitForWebhooks(t, c, func(p *corev1.Pod, err error) bool { return err == nil && len(p.Spec.Containers) == 2 })

	got, err := c.CoreV1().Pods("default").Create(ctx, pod("web"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"app", "sidecar"}, containerNames(got))
	assert.Equal(t, "sidecar", got.Annotations["sidecar.example.com/injected"])
	stored, err := c.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"app", "sidecar"}, containerNames(stored))
	// The sidecar was defaulted like the pod's own containers.
	assert.Equal(t, corev1.TerminationMessageReadFile, stored.Spec.Containers[1].TerminationMessagePolicy)
	warn.mu.Lock()
	assert.Contains(t, warn.msgs, `sidecar "sidecar" injected`)
	warn.mu.Unlock()

	// The namespace selector leaves opted-out namespaces alone.
	_, err = c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain",
		Labels: map[string]string{"sidecar.example.com/injection": "disabled"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	got, err = c.CoreV1().Pods("plain").Create(ctx, pod("web"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"app"}, containerNames(got))

	// Dry runs reach the webhook (sideEffects None) and store nothing.
	got, err = c.CoreV1().Pods("default").Create(ctx, pod("dry"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
	assert.Equal(t, []string{"app", "sidecar"}, containerNames(got))
}

func TestWebhookFailurePolicy(t *testing.T) {
	ctx := context.Background()
	c, _ := startAPIServer(t)
	// A webhook that is down: its port is closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadURL := "https://" + l.Addr().String() + "/mutate"
	require.NoError(t, l.Close())
	cert, err := NewServingCert("127.0.0.1")
	require.NoError(t, err)

	require.NoError(t, Register(ctx, c, Configuration(deadURL, cert.CAPEM, admissionregistrationv1.Fail)))
	waitForWebhooks(t, c, func(_ *corev1.Pod, err error) bool { return apierrors.IsInternalError(err) })
	_, err = c.CoreV1().Pods("default").Create(ctx, pod("rejected"), metav1.CreateOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsInternalError(err), "%v", err)
	assert.True(t, strings.HasPrefix(err.Error(), `Internal error occurred: failed calling webhook "sidecar.webhook-sidecar.example.com": failed to call webhook: Post "`+deadURL), err.Error())
	_, err = c.CoreV1().Pods("default").Get(ctx, "rejected", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)

	require.NoError(t, Register(ctx, c, Configuration(deadURL, cert.CAPEM, admissionregistrationv1.Ignore)))
	waitForWebhooks(t, c, func(_ *corev1.Pod, err error) bool { return err == nil })
	got, err := c.CoreV1().Pods("default").Create(ctx, pod("admitted"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"app"}, containerNames(got))

	// A webhook whose certificate the caBundle does not sign fails too.
	url, _ := startWebhook(t)
	require.NoError(t, Register(ctx, c, Configuration(url, cert.CAPEM, admissionregistrationv1.Fail)))
	waitForWebhooks(t, c, func(_ *corev1.Pod, err error) bool { return err != nil })
	_, err = c.CoreV1().Pods("default").Create(ctx, pod("wrong-ca"), metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate signed by unknown authority")
	// The configuration itself is exempt from webhooks, so it can be removed.
	require.NoError(t, c.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, ConfigurationName, metav1.DeleteOptions{}))
	waitForWebhooks(t, c, func(_ *corev1.Pod, err error) bool { return err == nil })
	_, err = c.CoreV1().Pods("default").Create(ctx, pod("after"), metav1.CreateOptions{})
	require.NoError(t, err)
	_ = time.Second
}
