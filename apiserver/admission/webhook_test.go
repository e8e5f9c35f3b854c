package admission

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

// hookServer answers AdmissionReviews with respond.
func hookServer(t *testing.T, respond func(pod *corev1.Pod) *admissionv1.AdmissionResponse) (string, []byte) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rev admissionv1.AdmissionReview
		require.NoError(t, json.NewDecoder(r.Body).Decode(&rev))
		var pod corev1.Pod
		require.NoError(t, json.Unmarshal(rev.Request.Object.Raw, &pod))
		resp := respond(&pod)
		resp.UID = rev.Request.UID
		_ = json.NewEncoder(w).Encode(&admissionv1.AdmissionReview{TypeMeta: rev.TypeMeta, Response: resp})
	}))
	t.Cleanup(srv.Close)
	return srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func jsonPatch(ops ...map[string]any) *admissionv1.AdmissionResponse {
	b, _ := json.Marshal(ops)
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: b, PatchType: &pt}
}

func podRule() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
}

func store(t *testing.T, objs map[string]runtime.Object) storage.Store {
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	for k, o := range objs {
		_, err := st.Create(context.Background(), k, o)
		require.NoError(t, err)
	}
	return st
}

func TestMutatingWebhookReinvocation(t *testing.T) {
	// "a" labels pods that carry label "b"; "b" adds label "b". With
	// reinvocationPolicy IfNeeded, "a" runs again after "b" and sees it.
	urlA, caA := hookServer(t, func(p *corev1.Pod) *admissionv1.AdmissionResponse {
		if p.Labels["b"] == "" || p.Labels["a"] != "" {
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
		return jsonPatch(map[string]any{"op": "add", "path": "/metadata/labels/a", "value": "saw-b"})
	})
	urlB, caB := hookServer(t, func(p *corev1.Pod) *admissionv1.AdmissionResponse {
		return jsonPatch(map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]string{"b": "1"}})
	})
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	none := admissionregistrationv1.SideEffectClassNone
	cfg := func(name, url string, ca []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
		return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: name + ".example.com", Rules: podRule(), SideEffects: &none,
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}, ReinvocationPolicy: &ifNeeded}}}
	}
	st := store(t, map[string]runtime.Object{
		storage.Key(mutatingConfigsGR, "", "1-a"): cfg("1-a", urlA, caA),
		storage.Key(mutatingConfigsGR, "", "2-b"): cfg("2-b", urlB, caB),
	})
	d := runWebhooks(t, WebhookConfig{Store: st})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	a := &Attributes{Operation: Create, Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Resource: corev1.SchemeGroupVersion.WithResource("pods"),
		Namespace: "ns", Name: "p", Object: pod}
	require.NoError(t, d.Mutating().Admit(context.Background(), a))
	assert.Equal(t, map[string]string{"a": "saw-b", "b": "1"}, pod.Labels, "patched in place, reinvoked")
}

func TestValidatingWebhookDenies(t *testing.T) {
	url, ca := hookServer(t, func(p *corev1.Pod) *admissionv1.AdmissionResponse {
		if p.Labels["team"] == "" {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: "pods need a team label"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"checked"}}
	})
	none := admissionregistrationv1.SideEffectClassNone
	st := store(t, map[string]runtime.Object{
		storage.Key(validatingConfigsGR, "", "team"): &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "team"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "team.example.com", Rules: podRule(), SideEffects: &none,
				ClientConfig:   admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
				ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}}}}},
	})
	d := runWebhooks(t, WebhookConfig{Store: st})
	attrs := func(labels map[string]string) *Attributes {
		return &Attributes{Operation: Create, Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Resource: corev1.SchemeGroupVersion.WithResource("pods"),
			Namespace: "ns", Name: "p", Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: labels}}}
	}
	err := d.Validating().Validate(context.Background(), attrs(nil))
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err))
	assert.Equal(t, `admission webhook "team.example.com" denied the request: pods need a team label`, err.Error())
	var warnings []string
	ctx := WithRecorder(context.Background(), RecorderFuncs{Warning: func(m string) { warnings = append(warnings, m) }})
	require.NoError(t, d.Validating().Validate(ctx, attrs(map[string]string{"team": "a"})))
	assert.Equal(t, []string{"checked"}, warnings)
	require.NoError(t, d.Validating().Validate(ctx, attrs(map[string]string{"skip": ""})), "objectSelector excludes it")
	dry := attrs(nil)
	dry.DryRun = true
	require.Error(t, d.Validating().Validate(ctx, dry), "sideEffects None still runs on dry run")
}
