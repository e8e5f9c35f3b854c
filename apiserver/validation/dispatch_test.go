package validation

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podkit/podkit/apiserver/admission"
)

func TestGenericObjectsGetObjectMetaValidation(t *testing.T) {
	v := Default()
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "Web"}}
	expectErrors(t, v.ValidateCreate(ing), inv("metadata.name", "RFC 1123 subdomain"), req("metadata.namespace"))

	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("example.com/v1")
	crd.SetKind("Widget")
	crd.SetName("w1")
	expectErrors(t, v.ValidateCreate(crd))
	crd.SetNamespace("Bad_NS")
	expectErrors(t, v.ValidateCreate(crd), inv("metadata.namespace", ""))

	scoped, err := New(WithScope(func(gk schema.GroupKind) (bool, bool) { return true, gk.Group == "example.com" }))
	require.NoError(t, err)
	crd.SetNamespace("")
	expectErrors(t, scoped.ValidateCreate(crd), req("metadata.namespace"))

	old := crd.DeepCopy()
	old.SetResourceVersion("4")
	upd := old.DeepCopy()
	upd.SetName("w2")
	expectErrors(t, v.ValidateUpdate(upd, old), inv("metadata.name", "field is immutable"))
	expectErrors(t, v.ValidateStatusUpdate(upd, old), inv("metadata.name", "field is immutable"))
}

func TestNilAndMismatchedObjectsDoNotPanic(t *testing.T) {
	v := Default()
	expectErrors(t, v.ValidateCreate(nil), internal("[]"))
	expectErrors(t, v.ValidateCreate((*corev1.Pod)(nil)), internal("[]"))
	expectErrors(t, v.ValidateUpdate(validPod(), nil), internal("[]"))
	expectErrors(t, v.ValidateUpdate(validPod(), &corev1.Node{}), internal("[]"))
	expectErrors(t, v.ValidateStatusUpdate(&corev1.Node{}, (*corev1.Node)(nil)), internal("[]"))
	expectErrors(t, v.ValidateEphemeralContainersUpdate(nil, validPod()), internal("[]"))
}

func TestGroupKindAndScope(t *testing.T) {
	v := Default()
	gk, ok := v.GroupKind(&corev1.Pod{})
	require.True(t, ok)
	assert.Equal(t, schema.GroupKind{Kind: "Pod"}, gk)
	gk, ok = v.GroupKind(&networkingv1.Ingress{})
	require.True(t, ok)
	assert.Equal(t, schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}, gk)
	_, ok = v.GroupKind(&unstructured.Unstructured{Object: map[string]any{}})
	assert.False(t, ok)

	for _, tc := range []struct {
		gk         schema.GroupKind
		namespaced bool
		known      bool
	}{
		{schema.GroupKind{Kind: "Pod"}, true, true},
		{schema.GroupKind{Kind: "Node"}, false, true},
		{schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}, false, true},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, true, true},
		{schema.GroupKind{Group: "example.com", Kind: "Widget"}, false, false},
	} {
		ns, known := v.Namespaced(tc.gk)
		assert.Equal(t, tc.known, known, tc.gk.String())
		assert.Equal(t, tc.namespaced, ns, tc.gk.String())
	}
}

func TestNewInvalid(t *testing.T) {
	pod := validPod()
	pod.Spec.Containers[0].Image = ""
	errs := ValidateCreate(pod)
	err := NewInvalid(pod, errs)
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err))
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status))
	st := status.Status()
	assert.Equal(t, int32(http.StatusUnprocessableEntity), st.Code)
	assert.Equal(t, metav1.StatusReasonInvalid, st.Reason)
	assert.Equal(t, `Pod "web" is invalid: spec.containers[0].image: Required value`, st.Message)
	require.NotNil(t, st.Details)
	assert.Equal(t, "Pod", st.Details.Kind)
	assert.Equal(t, "", st.Details.Group)
	assert.Equal(t, "web", st.Details.Name)
	require.Len(t, st.Details.Causes, 1)
	assert.Equal(t, metav1.CauseTypeFieldValueRequired, st.Details.Causes[0].Type)
	assert.Equal(t, "spec.containers[0].image", st.Details.Causes[0].Field)

	assert.NoError(t, NewInvalid(pod, nil))
	assert.NoError(t, NewInvalidFor(schema.GroupKind{Kind: "Pod"}, "x", field.ErrorList{}))

	dep := validDeployment()
	dep.Spec.Selector = nil
	err = NewInvalid(dep, ValidateCreate(dep))
	require.True(t, apierrors.IsInvalid(err))
	assert.Equal(t, "apps", err.(apierrors.APIStatus).Status().Details.Group)
	assert.Equal(t, "Deployment", err.(apierrors.APIStatus).Status().Details.Kind)

	gen := validPod()
	gen.Name, gen.GenerateName = "", "web-"
	err = NewInvalid(gen, ValidateCreate(gen))
	assert.Contains(t, err.Error(), `Pod "web-" is invalid`)
}

func TestAdmissionAdapter(t *testing.T) {
	v := Default()
	ctx := context.Background()
	var _ admission.Validator = v
	assert.True(t, v.Handles(admission.Create))
	assert.True(t, v.Handles(admission.Update))
	assert.False(t, v.Handles(admission.Delete))
	assert.Equal(t, "ObjectValidation", v.Name())

	bad := validPod()
	bad.Spec.RestartPolicy = "Sometimes"
	err := v.Validate(ctx, &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("Pod"),
		Resource: corev1.SchemeGroupVersion.WithResource("pods"), Namespace: "default", Name: "web", Object: bad})
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), `Pod "web" is invalid: spec.restartPolicy: Unsupported value: "Sometimes"`)

	require.NoError(t, v.Validate(ctx, &admission.Attributes{Operation: admission.Create, Object: validPod()}))
	require.NoError(t, v.Validate(ctx, &admission.Attributes{Operation: admission.Delete, OldObject: bad}))

	old := storedPod()
	running := old.DeepCopy()
	running.Status.Phase = corev1.PodRunning
	require.NoError(t, v.Validate(ctx, &admission.Attributes{Operation: admission.Update, Subresource: "status", Object: running, OldObject: old}))
	running.Status.Phase = "Sleeping"
	err = v.Validate(ctx, &admission.Attributes{Operation: admission.Update, Subresource: "status", Object: running, OldObject: old})
	require.True(t, apierrors.IsInvalid(err))

	withDebug := old.DeepCopy()
	withDebug.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon(validContainer("debug"))}}
	require.NoError(t, v.Validate(ctx, &admission.Attributes{Operation: admission.Update, Subresource: "ephemeralcontainers", Object: withDebug, OldObject: old}))
	err = v.Validate(ctx, &admission.Attributes{Operation: admission.Update, Object: withDebug, OldObject: old})
	require.True(t, apierrors.IsInvalid(err), "main resource may not add ephemeral containers: %v", err)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = v.Validate(cancelled, &admission.Attributes{Operation: admission.Create, Object: validPod()})
	require.ErrorIs(t, err, context.Canceled)
}

func TestOptions(t *testing.T) {
	_, err := New(WithScope(nil))
	require.ErrorIs(t, err, ErrInvalidOption)
	_, err = New(WithNodePortRange(0, 10))
	require.ErrorIs(t, err, ErrInvalidOption)
	_, err = New(WithNodePortRange(30000, -1))
	require.ErrorIs(t, err, ErrInvalidOption)
	v, err := New(WithStrictIPValidation(true), WithAllowPrivileged(true))
	require.NoError(t, err)

	svc := validService()
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.096.0.10", []string{"10.096.0.10"}
	expectErrors(t, Default().ValidateCreate(svc))
	expectErrors(t, v.ValidateCreate(svc), inv("spec.clusterIPs[0]", ""))
	// A legacy value already stored stays valid on update even when strict.
	old := svc.DeepCopy()
	old.ObjectMeta = storedMeta(old.ObjectMeta)
	expectErrors(t, v.ValidateUpdate(old.DeepCopy(), old))
}
