// Command webhook-sidecar is a runnable mutating admission webhook: an
// HTTPS server answering AdmissionReview v1 requests by injecting a
// sidecar container into every new pod, and, with -kubeconfig, the
// MutatingWebhookConfiguration that makes an API server call it (its URL
// and caBundle). It shows the dynamic side of step 3 of the birth
// sequence ("mutating admission → validation → validating admission"):
// the API server sends the pod to the webhook, applies the returned JSON
// patch, and stores the pod with the extra container.
//
//	go run ./examples/webhook-sidecar -addr 127.0.0.1:8443 -kubeconfig /var/lib/podkit/kubeconfig
//	kubectl run demo --image=busybox -- sleep 3600
//	kubectl get pod demo -o jsonpath='{.spec.containers[*].name}'   # demo sidecar
//
// The webhook makes its own CA and serving certificate at start.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// ConfigurationName names the MutatingWebhookConfiguration Register writes.
const ConfigurationName = "webhook-sidecar.example.com"

// DefaultSidecar is the container injected by default.
func DefaultSidecar() corev1.Container {
	return corev1.Container{Name: "sidecar", Image: "busybox", Command: []string{"sleep", "3600"}}
}

// Serve serves the injector over TLS on l until ctx is done.
func Serve(ctx context.Context, l net.Listener, cert tls.Certificate, in *Injector) error {
	mux := http.NewServeMux()
	mux.Handle("/mutate", in)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(l, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// Configuration is the MutatingWebhookConfiguration calling the webhook at
// url for pod creations in namespaces not labelled
// sidecar.example.com/injection=disabled.
func Configuration(url string, caBundle []byte, failure admissionregistrationv1.FailurePolicyType) *admissionregistrationv1.MutatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(5)
	scope := admissionregistrationv1.NamespacedScope
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "sidecar.webhook-sidecar.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope}}},
			FailurePolicy:           &failure,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "sidecar.example.com/injection", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"disabled"}}}},
		}},
	}
}

// Register creates or replaces the webhook configuration.
func Register(ctx context.Context, c kubernetes.Interface, cfg *admissionregistrationv1.MutatingWebhookConfiguration) error {
	api := c.AdmissionregistrationV1().MutatingWebhookConfigurations()
	_, err := api.Create(ctx, cfg, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, gerr := api.Get(ctx, cfg.Name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		cfg.ResourceVersion = cur.ResourceVersion
		_, err = api.Update(ctx, cfg, metav1.UpdateOptions{})
	}
	return err
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8443", "address to serve HTTPS on")
	kubeconfig := flag.String("kubeconfig", "", "register the webhook with the API server of this kubeconfig")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *kubeconfig); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "webhook-sidecar:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, kubeconfig string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(l.Addr().String())
	cert, err := NewServingCert(host, "localhost")
	if err != nil {
		return err
	}
	url := "https://" + l.Addr().String() + "/mutate"
	if kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return err
		}
		c, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return err
		}
		if err := Register(ctx, c, Configuration(url, cert.CAPEM, admissionregistrationv1.Fail)); err != nil {
			return fmt.Errorf("registering the webhook: %w", err)
		}
	}
	slog.Info("webhook-sidecar serving", "url", url)
	return Serve(ctx, l, cert.TLS, &Injector{Sidecar: DefaultSidecar()})
}
