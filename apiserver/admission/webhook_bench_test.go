package admission

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWebhookAdmissionPodCreate is the webhook plugins' share of a
// pod create (Mutating.Admit then Validating.Validate) with n mutating and
// n validating configurations stored, none of which selects pods (so no
// webhook is called: what is measured is finding the webhooks to match).
// cpu-ns/op is the process's user+system time per create, which the
// shared benchmark machine's load does not inflate the way it does
// wall-clock time.
func BenchmarkWebhookAdmissionPodCreate(b *testing.B) {
	for _, n := range []int{0, 10, 100, 1000} {
		b.Run(fmt.Sprintf("configs=%d", n), func(b *testing.B) {
			ctx := context.Background()
			st := memory.New()
			b.Cleanup(func() { _ = st.Close() })
			url := "https://127.0.0.1:1/never-called"
			rules := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}
			none := admissionregistrationv1.SideEffectClassNone
			for i := range n {
				name := fmt.Sprintf("cfg-%04d", i)
				m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
					Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: name + ".example.com", Rules: rules, SideEffects: &none,
						ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}}}}
				v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
					Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: name + ".example.com", Rules: rules, SideEffects: &none,
						ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}}}}
				if _, err := st.Create(ctx, storage.Key(mutatingConfigsGR, "", name), m); err != nil {
					b.Fatal(err)
				}
				if _, err := st.Create(ctx, storage.Key(validatingConfigsGR, "", name), v); err != nil {
					b.Fatal(err)
				}
			}
			d, err := NewWebhooks(WebhookConfig{Store: st})
			if err != nil {
				b.Fatal(err)
			}
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); d.Run(runCtx) }()
			b.Cleanup(func() { cancel(); <-done })
			if err := d.WaitForSync(ctx); err != nil {
				b.Fatal(err)
			}
			mut, val := d.Mutating(), d.Validating()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for b.Loop() {
				a := podCreate("p")
				if err := mut.Admit(ctx, a); err != nil {
					b.Fatal(err)
				}
				if err := val.Validate(ctx, a); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
