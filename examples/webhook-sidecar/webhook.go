package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SkipAnnotation set to "true" on a pod opts it out of injection.
const SkipAnnotation = "sidecar.example.com/skip"

// Injector is a mutating admission webhook (an http.Handler for POSTed
// AdmissionReview v1 requests) that appends Sidecar to every pod created
// without a container of that name, answering with a JSONPatch — what
// Istio's or Linkerd's injectors do behind a MutatingWebhookConfiguration.
type Injector struct {
	Sidecar corev1.Container
}

// ServeHTTP answers one AdmissionReview.
func (in *Injector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 3<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	resp := in.review(review.Request)
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&out)
}

func (in *Injector) review(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	allow := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Kind.Kind != "Pod" || req.SubResource != "" {
		return allow
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusBadRequest, Message: "cannot decode the pod: " + err.Error()}}
	}
	if pod.Annotations[SkipAnnotation] == "true" {
		return allow
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == in.Sidecar.Name {
			return allow
		}
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "add", "path": "/spec/containers/-", "value": in.Sidecar},
		{"op": "add", "path": "/metadata/annotations", "value": mergeAnnotations(pod.Annotations, "sidecar.example.com/injected", in.Sidecar.Name)},
	})
	if err != nil {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusInternalServerError, Message: err.Error()}}
	}
	pt := admissionv1.PatchTypeJSONPatch
	allow.Patch, allow.PatchType = patch, &pt
	allow.Warnings = []string{fmt.Sprintf("sidecar %q injected", in.Sidecar.Name)}
	return allow
}

func mergeAnnotations(have map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for hk, hv := range have {
		out[hk] = hv
	}
	return out
}
