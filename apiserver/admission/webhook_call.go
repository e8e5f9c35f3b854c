package admission

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/podkit/podkit/apiserver/storage"
)

const (
	defaultWebhookTimeout = 10 * time.Second
	maxWebhookResponse    = 10 << 20
)

var servicesGRForWebhooks = schema.GroupResource{Resource: "services"}

// serviceClusterIP resolves a service reference to its cluster IP, as
// kube-apiserver does without --enable-aggregator-routing.
func (d *Webhooks) serviceClusterIP(ctx context.Context, namespace, name string, port int32) (string, string, error) {
	svc, found, err := getTyped[*corev1.Service](ctx, d.cfg.Store, storage.Key(servicesGRForWebhooks, namespace, name))
	if err != nil {
		return "", "", err
	}
	if !found {
		return "", "", fmt.Errorf("service %s/%s not found", namespace, name)
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return "", "", fmt.Errorf("service %s/%s has no cluster IP", namespace, name)
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(port))), name + "." + namespace + ".svc", nil
}

// endpoint returns the URL to call and the TLS name to verify.
func (d *Webhooks) endpoint(ctx context.Context, cc *admissionregistrationv1.WebhookClientConfig) (*url.URL, string, error) {
	if cc.URL != nil {
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return nil, "", fmt.Errorf("invalid webhook URL: %w", err)
		}
		if u.Scheme != "https" {
			return nil, "", fmt.Errorf("webhook URL %q: scheme must be https", *cc.URL)
		}
		return u, u.Hostname(), nil
	}
	if cc.Service == nil {
		return nil, "", errors.New("webhook has neither url nor service")
	}
	port := int32(443)
	if cc.Service.Port != nil {
		port = *cc.Service.Port
	}
	host, serverName, err := d.cfg.ResolveService(ctx, cc.Service.Namespace, cc.Service.Name, port)
	if err != nil {
		return nil, "", err
	}
	path := "/"
	if cc.Service.Path != nil {
		path = *cc.Service.Path
	}
	return &url.URL{Scheme: "https", Host: host, Path: path}, serverName, nil
}

// client returns an HTTP client trusting caBundle (the system roots when
// empty) and verifying serverName.
func (d *Webhooks) client(caBundle []byte, serverName string) (*http.Client, error) {
	sum := sha256.Sum256(caBundle)
	key := string(sum[:]) + "/" + serverName
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.clients[key]; ok {
		return c, nil
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("invalid caBundle: no PEM certificates")
		}
		tlsCfg.RootCAs = pool
	}
	base := &http.Transport{TLSClientConfig: tlsCfg, MaxIdleConnsPerHost: 8, IdleConnTimeout: 90 * time.Second}
	var rt http.RoundTripper = base
	if d.cfg.Transport != nil {
		rt = d.cfg.Transport(base)
	}
	c := &http.Client{Transport: rt}
	if len(d.clients) > 256 {
		d.clients = map[string]*http.Client{}
	}
	d.clients[key] = c
	return c, nil
}

// call sends the AdmissionReview for a to the webhook.
func (d *Webhooks) call(ctx context.Context, w *webhookSpec, a *Attributes) (*admissionv1.AdmissionResponse, error) {
	if a.DryRun && (w.SideEffects == nil || (*w.SideEffects != admissionregistrationv1.SideEffectClassNone && *w.SideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun)) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", w.Name))
	}
	u, serverName, err := d.endpoint(ctx, &w.ClientConfig)
	if err != nil {
		return nil, err
	}
	client, err := d.client(w.ClientConfig.CABundle, serverName)
	if err != nil {
		return nil, err
	}
	review, err := buildReview(a)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, fmt.Errorf("encoding AdmissionReview: %w", err)
	}
	timeout := defaultWebhookTimeout
	if w.TimeoutSeconds != nil && *w.TimeoutSeconds > 0 {
		timeout = time.Duration(*w.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String()+"?timeout="+timeout.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to call webhook: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxWebhookResponse))
	if err != nil {
		return nil, fmt.Errorf("failed to read webhook response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("webhook responded with status %d: %s", resp.StatusCode, bytes.TrimSpace(data))
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("received invalid webhook response: %w", err)
	}
	if out.Response == nil {
		return nil, errors.New("webhook response was absent")
	}
	if out.Response.UID != review.Request.UID {
		return nil, fmt.Errorf("expected response.uid=%q, got %q", review.Request.UID, out.Response.UID)
	}
	if len(out.Response.Patch) > 0 && (out.Response.PatchType == nil || *out.Response.PatchType != admissionv1.PatchTypeJSONPatch) {
		return nil, errors.New("webhook returned a patch without patchType JSONPatch")
	}
	return out.Response, nil
}

// buildReview is the AdmissionReview v1 request for a.
func buildReview(a *Attributes) (*admissionv1.AdmissionReview, error) {
	dry := a.DryRun
	req := &admissionv1.AdmissionRequest{
		UID:         uuid.NewUUID(),
		Kind:        metav1.GroupVersionKind(a.Kind),
		Resource:    metav1.GroupVersionResource(a.Resource),
		SubResource: a.Subresource,
		Name:        objectNameOrEmpty(a),
		Namespace:   a.Namespace,
		Operation:   admissionv1.Operation(a.Operation),
		DryRun:      &dry,
	}
	rk, rr := req.Kind, req.Resource
	req.RequestKind, req.RequestResource, req.RequestSubResource = &rk, &rr, a.Subresource
	if a.User != nil {
		req.UserInfo = authenticationv1.UserInfo{Username: a.User.GetName(), UID: a.User.GetUID(), Groups: a.User.GetGroups()}
		if extra := a.User.GetExtra(); len(extra) > 0 {
			req.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
			for k, v := range extra {
				req.UserInfo.Extra[k] = v
			}
		}
	}
	var err error
	if req.Object.Raw, err = encodeWithKind(a.Object, a.Kind); err != nil {
		return nil, err
	}
	if req.OldObject.Raw, err = encodeWithKind(a.OldObject, a.Kind); err != nil {
		return nil, err
	}
	var opts any
	switch a.Operation {
	case Create:
		opts = &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}}
	case Update:
		opts = &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}}
	case Delete:
		opts = &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}}
	}
	if opts != nil {
		if req.Options.Raw, err = json.Marshal(opts); err != nil {
			return nil, err
		}
	}
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request:  req,
	}, nil
}

func objectNameOrEmpty(a *Attributes) string {
	if n := objectName(a); n != "Unknown" {
		return n
	}
	return ""
}

// encodeWithKind renders obj as JSON with its apiVersion and kind.
func encodeWithKind(obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil, nil
	}
	c := obj.DeepCopyObject()
	if c.GetObjectKind().GroupVersionKind().Empty() {
		c.GetObjectKind().SetGroupVersionKind(gvk)
	}
	data, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", gvk.Kind, err)
	}
	return data, nil
}

// applyJSONPatch applies an RFC 6902 patch to obj and returns a new object
// of the same Go type (with obj's TypeMeta).
func applyJSONPatch(obj runtime.Object, gvk schema.GroupVersionKind, patch []byte) (runtime.Object, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	doc, err := encodeWithKind(obj, gvk)
	if err != nil {
		return nil, err
	}
	out, err := p.Apply(doc)
	if err != nil {
		return nil, err
	}
	fresh := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	if err := json.Unmarshal(out, fresh); err != nil {
		return nil, fmt.Errorf("decoding patched object: %w", err)
	}
	fresh.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return fresh, nil
}

// denied is the error of a webhook's rejection, as kube-apiserver words it.
func denied(name string, result *metav1.Status) error {
	st := metav1.Status{Status: metav1.StatusFailure}
	if result != nil {
		st = *result
	}
	if st.Code < http.StatusBadRequest {
		st.Code = http.StatusBadRequest
	}
	if st.Status == "" || st.Status == metav1.StatusSuccess {
		st.Status = metav1.StatusFailure
	}
	by := fmt.Sprintf("admission webhook %q denied the request", name)
	switch {
	case st.Message != "":
		st.Message = by + ": " + st.Message
	case st.Reason != "":
		st.Message = by + ": " + string(st.Reason)
	default:
		st.Message = by + " without explanation"
	}
	return &apierrors.StatusError{ErrStatus: st}
}
