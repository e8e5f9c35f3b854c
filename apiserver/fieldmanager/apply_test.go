package fieldmanager

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestApplyCreatesDeployment(t *testing.T) {
	m, _ := newManager(t)
	out, warnings, err := m.Apply(context.Background(), nil, deployGVK, []byte(deployYAML), ApplyOptions{FieldManager: "kubectl"})
	require.NoError(t, err)
	assert.Empty(t, warnings)

	d := out.(*appsv1.Deployment)
	assert.Equal(t, metav1.TypeMeta{}, d.TypeMeta, "objects inside the server carry no TypeMeta")
	assert.Equal(t, "web", d.Name)
	assert.Equal(t, "default", d.Namespace)
	assert.Equal(t, int32(3), *d.Spec.Replicas)
	assert.Equal(t, "nginx:1.27", d.Spec.Template.Spec.Containers[0].Image)
	// Defaulted like a decoded body.
	require.NotNil(t, d.Spec.ProgressDeadlineSeconds)
	assert.Equal(t, int32(600), *d.Spec.ProgressDeadlineSeconds)
	assert.Equal(t, corev1.PullIfNotPresent, d.Spec.Template.Spec.Containers[0].ImagePullPolicy)

	require.Len(t, d.ManagedFields, 1)
	e := d.ManagedFields[0]
	assert.Equal(t, "kubectl", e.Manager)
	assert.Equal(t, metav1.ManagedFieldsOperationApply, e.Operation)
	assert.Equal(t, "apps/v1", e.APIVersion)
	assert.Equal(t, "FieldsV1", e.FieldsType)
	assert.Empty(t, e.Subresource)
	require.NotNil(t, e.Time)
	assert.Equal(t, t0, e.Time.Time, "clock time, UTC, whole seconds")
	assert.JSONEq(t, `{
		"f:metadata":{"f:labels":{"f:app":{},"f:tier":{}}},
		"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{
			"f:metadata":{"f:labels":{"f:app":{}}},
			"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`,
		string(e.FieldsV1.Raw))
}

// applyStep is one write of a scenario.
type applyStep struct {
	manager string
	patch   string
	force   bool
	// update, when set, is a non-apply write by manager: it mutates a copy
	// of the live object, or creates deployYAML when there is none yet.
	update  func(obj runtime.Object)
	wantErr string
}

func TestApplySequences(t *testing.T) {
	replicas := func(n int32) func(runtime.Object) {
		return func(obj runtime.Object) { obj.(*appsv1.Deployment).Spec.Replicas = &n }
	}
	tests := []struct {
		name  string
		steps []applyStep
		check func(t *testing.T, out *appsv1.Deployment)
	}{{
		name: "second manager changing replicas conflicts",
		steps: []applyStep{
			{manager: "kubectl", patch: deployYAML},
			{manager: "hpa-tool", patch: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":5}}`,
				wantErr: `Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas`},
		},
	}, {
		name: "force takes ownership",
		steps: []applyStep{
			{manager: "kubectl", patch: deployYAML},
			{manager: "hpa-tool", force: true, patch: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":5}}`},
		},
		check: func(t *testing.T, out *appsv1.Deployment) {
			assert.Equal(t, int32(5), *out.Spec.Replicas)
			assert.True(t, owns(t, entry(t, out, "hpa-tool", metav1.ManagedFieldsOperationApply, ""), "spec", "replicas"))
			kubectl := entry(t, out, "kubectl", metav1.ManagedFieldsOperationApply, "")
			assert.False(t, owns(t, kubectl, "spec", "replicas"), "kubectl lost replicas")
			assert.True(t, owns(t, kubectl, "spec", "selector"), "kubectl keeps the rest")
		},
	}, {
		name: "same value by another manager is shared",
		steps: []applyStep{
			{manager: "kubectl", patch: deployYAML},
			{manager: "other", patch: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":3}}`},
		},
		check: func(t *testing.T, out *appsv1.Deployment) {
			assert.True(t, owns(t, entry(t, out, "other", metav1.ManagedFieldsOperationApply, ""), "spec", "replicas"))
			assert.True(t, owns(t, entry(t, out, "kubectl", metav1.ManagedFieldsOperationApply, ""), "spec", "replicas"))
		},
	}, {
		name: "dropping an owned label removes it, another manager's label stays",
		steps: []applyStep{
			{manager: "kubectl", patch: deployYAML},
			{manager: "labeler", patch: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","labels":{"team":"a"}}}`},
			{manager: "kubectl", patch: strings.Replace(deployYAML, "    tier: frontend\n", "", 1)},
		},
		check: func(t *testing.T, out *appsv1.Deployment) {
			assert.Equal(t, map[string]string{"app": "web", "team": "a"}, out.Labels)
			assert.False(t, owns(t, entry(t, out, "kubectl", metav1.ManagedFieldsOperationApply, ""), "metadata", "labels", "tier"))
		},
	}, {
		name: "client-side apply then server-side apply by another manager conflicts with the update entry",
		steps: []applyStep{
			{manager: "kubectl-client-side-apply", update: replicas(4)},
			{manager: "ssa", patch: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":2}}`,
				wantErr: `Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas`},
		},
	}, {
		name: "update then apply of other fields succeeds and both entries remain",
		steps: []applyStep{
			{manager: "kubectl-client-side-apply", update: replicas(4)},
			{manager: "kubectl", patch: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","labels":{"x":"y"}}}`},
		},
		check: func(t *testing.T, out *appsv1.Deployment) {
			assert.Equal(t, int32(4), *out.Spec.Replicas)
			assert.True(t, owns(t, entry(t, out, "kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, ""), "spec", "replicas"))
			assert.True(t, owns(t, entry(t, out, "kubectl", metav1.ManagedFieldsOperationApply, ""), "metadata", "labels", "x"))
		},
	}, {
		name: "kubectl server-side apply over its own client-side apply upgrades without conflict",
		steps: []applyStep{
			{manager: "kubectl-client-side-apply", update: func(obj runtime.Object) {
				d := obj.(*appsv1.Deployment)
				n := int32(4)
				d.Spec.Replicas = &n
				d.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":4}}`}
			}},
			{manager: "kubectl", patch: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":6}}`},
		},
		check: func(t *testing.T, out *appsv1.Deployment) {
			assert.Equal(t, int32(6), *out.Spec.Replicas)
			assert.True(t, owns(t, entry(t, out, "kubectl", metav1.ManagedFieldsOperationApply, ""), "spec", "replicas"))
			assert.Contains(t, out.Annotations[corev1.LastAppliedConfigAnnotation], `"replicas":6`, "kubectl's annotation follows the apply")
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, clk := newManager(t)
			ctx := context.Background()
			var live runtime.Object
			for i, s := range tt.steps {
				var out runtime.Object
				var err error
				if s.update != nil {
					obj := newDeployment(t)
					if live != nil {
						obj = live.DeepCopyObject()
					}
					s.update(obj)
					out, err = m.Update(ctx, live, obj, deployGVK, UpdateOptions{FieldManager: s.manager})
				} else {
					out, _, err = m.Apply(ctx, live, deployGVK, []byte(s.patch), ApplyOptions{FieldManager: s.manager, Force: s.force})
				}
				if s.wantErr != "" {
					require.Error(t, err, "step %d", i)
					assert.Equal(t, s.wantErr, err.Error())
					assert.True(t, apierrors.IsConflict(err))
					assert.ErrorIs(t, err, ErrConflict)
					return
				}
				require.NoError(t, err, "step %d", i)
				live = persisted(t, out, "1")
				clk.advance(time.Second)
			}
			if tt.check != nil {
				tt.check(t, live.(*appsv1.Deployment))
			}
		})
	}
}

func TestApplyConflictStatus(t *testing.T) {
	m, _ := newManager(t)
	ctx := context.Background()
	live, _, err := m.Apply(ctx, nil, deployGVK, []byte(deployYAML), ApplyOptions{FieldManager: "kubectl"})
	require.NoError(t, err)
	_, _, err = m.Apply(ctx, persisted(t, live, "7"), deployGVK,
		[]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","labels":{"app":"api"}},"spec":{"replicas":1}}`),
		ApplyOptions{FieldManager: "ops"})
	var st apierrors.APIStatus
	require.ErrorAs(t, err, &st)
	s := st.Status()
	assert.Equal(t, int32(http.StatusConflict), s.Code)
	assert.Equal(t, metav1.StatusReasonConflict, s.Reason)
	assert.Equal(t, "Apply failed with 2 conflicts: conflicts with \"kubectl\":\n- .metadata.labels.app\n- .spec.replicas", s.Message)
	require.NotNil(t, s.Details)
	assert.ElementsMatch(t, []metav1.StatusCause{
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl"`, Field: ".metadata.labels.app"},
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl"`, Field: ".spec.replicas"},
	}, s.Details.Causes)
}

func TestApplyListMapMergesContainersByName(t *testing.T) {
	m, _ := newManager(t)
	ctx := context.Background()
	pod := `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers:
  - name: app
    image: app:1
    ports:
    - containerPort: 8080
`
	live, _, err := m.Apply(ctx, nil, podGVK, []byte(pod), ApplyOptions{FieldManager: "kubectl"})
	require.NoError(t, err)
	live = persisted(t, live, "1")

	sidecar := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},
		"spec":{"containers":[{"name":"proxy","image":"envoy:1"},{"name":"app","env":[{"name":"MODE","value":"x"}]}]}}`
	out, _, err := m.Apply(ctx, live, podGVK, []byte(sidecar), ApplyOptions{FieldManager: "injector"})
	require.NoError(t, err)
	p := out.(*corev1.Pod)
	require.Len(t, p.Spec.Containers, 2)
	byName := map[string]corev1.Container{}
	for _, c := range p.Spec.Containers {
		byName[c.Name] = c
	}
	assert.Equal(t, "app:1", byName["app"].Image, "kubectl's image kept")
	assert.Equal(t, []corev1.EnvVar{{Name: "MODE", Value: "x"}}, byName["app"].Env, "merged into the same container")
	assert.Equal(t, int32(8080), byName["app"].Ports[0].ContainerPort)
	assert.Equal(t, "envoy:1", byName["proxy"].Image)

	inj := entry(t, out, "injector", metav1.ManagedFieldsOperationApply, "")
	assert.True(t, owns(t, inj, "spec", "containers", keyName("proxy"), "image"))
	assert.True(t, owns(t, inj, "spec", "containers", keyName("app"), "env", keyName("MODE"), "value"))
	assert.False(t, owns(t, inj, "spec", "containers", keyName("app"), "image"))
	assert.True(t, owns(t, entry(t, out, "kubectl", metav1.ManagedFieldsOperationApply, ""), "spec", "containers", keyName("app"), "image"))

	// kubectl drops the container it never declared? No: it owns only app.
	// Removing its port leaves the injector's fields alone.
	out2, _, err := m.Apply(ctx, persisted(t, out, "2"), podGVK, []byte(strings.Replace(pod, "    ports:\n    - containerPort: 8080\n", "", 1)),
		ApplyOptions{FieldManager: "kubectl"})
	require.NoError(t, err)
	p2 := out2.(*corev1.Pod)
	require.Len(t, p2.Spec.Containers, 2)
	for _, c := range p2.Spec.Containers {
		assert.Empty(t, c.Ports, c.Name)
	}
}

func TestApplyConfigMapGranularKeys(t *testing.T) {
	m, _ := newManager(t)
	ctx := context.Background()
	live, _, err := m.Apply(ctx, nil, cmGVK, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"},"data":{"a":"1","b":"2"}}`),
		ApplyOptions{FieldManager: "one"})
	require.NoError(t, err)
	out, _, err := m.Apply(ctx, persisted(t, live, "1"), cmGVK, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"},"data":{"c":"3"}}`),
		ApplyOptions{FieldManager: "two"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", "b": "2", "c": "3"}, out.(*corev1.ConfigMap).Data)
	out, _, err = m.Apply(ctx, persisted(t, out, "2"), cmGVK, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"},"data":{"a":"1"}}`),
		ApplyOptions{FieldManager: "one"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", "c": "3"}, out.(*corev1.ConfigMap).Data, "b dropped by its only owner")
	_, _, err = m.Apply(ctx, persisted(t, out, "3"), cmGVK, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"},"data":{"c":"4"}}`),
		ApplyOptions{FieldManager: "one"})
	require.ErrorIs(t, err, ErrConflict)
	assert.EqualError(t, err, `Apply failed with 1 conflict: conflict with "two": .data.c`)
}

func TestApplyStatusSubresource(t *testing.T) {
	m, _ := newManager(t)
	ctx := context.Background()
	live, _, err := m.Apply(ctx, nil, deployGVK, []byte(deployYAML), ApplyOptions{FieldManager: "kubectl"})
	require.NoError(t, err)
	live = persisted(t, live, "1")

	status := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
		"spec":{"replicas":9},"status":{"replicas":3,"readyReplicas":2}}`
	out, _, err := m.Apply(ctx, live, deployGVK, []byte(status), ApplyOptions{FieldManager: "controller", Subresource: "status"})
	require.NoError(t, err, "spec is reset on status writes, so kubectl's replicas do not conflict")
	e := entry(t, out, "controller", metav1.ManagedFieldsOperationApply, "status")
	assert.True(t, owns(t, e, "status", "readyReplicas"))
	assert.False(t, owns(t, e, "spec", "replicas"), "the status writer never owns spec")
	assert.Equal(t, int32(2), out.(*appsv1.Deployment).Status.ReadyReplicas)

	// Status applied through the main resource is not owned either.
	out, _, err = m.Apply(ctx, persisted(t, out, "2"), deployGVK, []byte(status), ApplyOptions{FieldManager: "kubectl", Force: true})
	require.NoError(t, err)
	assert.False(t, owns(t, entry(t, out, "kubectl", metav1.ManagedFieldsOperationApply, ""), "status", "readyReplicas"))
}

func TestApplyErrors(t *testing.T) {
	tests := []struct {
		name     string
		patch    string
		opts     ApplyOptions
		gvk      schema.GroupVersionKind
		sentinel error
		code     int32
		reason   metav1.StatusReason
		message  string
	}{{
		name: "no field manager", patch: deployYAML, opts: ApplyOptions{},
		sentinel: ErrInvalidOptions, code: http.StatusUnprocessableEntity, reason: metav1.StatusReasonInvalid,
		message: `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`,
	}, {
		name: "unprintable field manager", patch: deployYAML, opts: ApplyOptions{FieldManager: "a\tb"},
		sentinel: ErrInvalidOptions, code: http.StatusUnprocessableEntity, reason: metav1.StatusReasonInvalid,
		message: `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "a\tb": invalid character U+0009 (at position 1)`,
	}, {
		name: "bad field validation", patch: deployYAML, opts: ApplyOptions{FieldManager: "k", FieldValidation: "Loud"},
		sentinel: ErrInvalidOptions, code: http.StatusUnprocessableEntity, reason: metav1.StatusReasonInvalid,
		message: `PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loud": supported values: "", "Ignore", "Strict", "Warn"`,
	}, {
		name: "not yaml", patch: "a: [", opts: ApplyOptions{FieldManager: "k"},
		sentinel: ErrBadPatch, code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest,
		message: "error decoding patch: error converting YAML to JSON: yaml: line 1: did not find expected node content",
	}, {
		name: "wrong kind", patch: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"}}`, opts: ApplyOptions{FieldManager: "k"},
		sentinel: ErrBadPatch, code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest,
		message: "invalid object type: /v1, Kind=Pod",
	}, {
		name: "no apiVersion", patch: `{"metadata":{"name":"web"}}`, opts: ApplyOptions{FieldManager: "k"},
		sentinel: ErrBadPatch, code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest,
		message: "invalid object type: /, Kind=",
	}, {
		name: "managedFields in the patch", opts: ApplyOptions{FieldManager: "k"},
		patch:    `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","managedFields":[{"manager":"x"}]}}`,
		sentinel: ErrBadPatch, code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest,
		message: "metadata.managedFields must be nil",
	}, {
		name: "unknown field", opts: ApplyOptions{FieldManager: "k"},
		patch:    `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicaz":1}}`,
		sentinel: ErrMerge, code: http.StatusInternalServerError, reason: metav1.StatusReasonUnknown,
		message: "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.replicaz: field not declared in schema",
	}, {
		name: "duplicate field under Strict", opts: ApplyOptions{FieldManager: "k", FieldValidation: "Strict"},
		patch:    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  replicas: 2\n",
		sentinel: ErrBadPatch, code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest,
		message: "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line 7: key \"replicas\" already set in map",
	}}
	m, _ := newManager(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gvk := tt.gvk
			if gvk.Empty() {
				gvk = deployGVK
			}
			_, _, err := m.Apply(context.Background(), nil, gvk, []byte(tt.patch), tt.opts)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.sentinel)
			var st apierrors.APIStatus
			require.ErrorAs(t, err, &st)
			assert.Equal(t, tt.code, st.Status().Code)
			assert.Equal(t, tt.reason, st.Status().Reason)
			assert.Equal(t, tt.message, st.Status().Message)
		})
	}
}

func TestApplyFieldValidationOfDuplicates(t *testing.T) {
	patch := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  replicas: 1\n  replicas: 2\n"
	tests := []struct {
		validation string
		warnings   []string
	}{
		{"", []string{`line 8: key "replicas" already set in map`}},
		{"Warn", []string{`line 8: key "replicas" already set in map`}},
		{"Ignore", nil},
	}
	m, _ := newManager(t)
	for _, tt := range tests {
		t.Run("validation="+tt.validation, func(t *testing.T) {
			out, warnings, err := m.Apply(context.Background(), nil, deployGVK, []byte(patch),
				ApplyOptions{FieldManager: "k", FieldValidation: tt.validation})
			require.NoError(t, err)
			assert.Equal(t, tt.warnings, warnings)
			assert.Equal(t, int32(2), *out.(*appsv1.Deployment).Spec.Replicas, "the last value wins")
		})
	}
}

func TestApplyUnknownKind(t *testing.T) {
	m, _ := newManager(t)
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	_, _, err := m.Apply(context.Background(), nil, gvk, []byte(`{}`), ApplyOptions{FieldManager: "k"})
	assert.ErrorIs(t, err, ErrUnknownKind)
	_, err = New(runtimeSchemeWithout(), WithKinds(gvk))
	assert.ErrorIs(t, err, ErrUnknownKind)
}

func TestApplyLeavesLiveUntouchedAndHonoursContext(t *testing.T) {
	m, _ := newManager(t)
	live, _, err := m.Apply(context.Background(), nil, deployGVK, []byte(deployYAML), ApplyOptions{FieldManager: "kubectl"})
	require.NoError(t, err)
	live = persisted(t, live, "4")
	snapshot := live.DeepCopyObject()
	out, _, err := m.Apply(context.Background(), live, deployGVK,
		[]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","labels":{"new":"x"}}}`),
		ApplyOptions{FieldManager: "other"})
	require.NoError(t, err)
	assert.Equal(t, snapshot, live)
	assert.Equal(t, "4", out.(*appsv1.Deployment).ResourceVersion, "the live resourceVersion is kept for the store's check")
	assert.Equal(t, live.(*appsv1.Deployment).UID, out.(*appsv1.Deployment).UID)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = m.Apply(ctx, live, deployGVK, []byte(deployYAML), ApplyOptions{FieldManager: "kubectl"})
	assert.True(t, errors.Is(err, context.Canceled))
}

func TestApplyNoChangeKeepsTimestamp(t *testing.T) {
	m, clk := newManager(t)
	ctx := context.Background()
	live, _, err := m.Apply(ctx, nil, deployGVK, []byte(deployYAML), ApplyOptions{FieldManager: "kubectl"})
	require.NoError(t, err)
	live = persisted(t, live, "1")
	clk.advance(time.Minute)
	out, _, err := m.Apply(ctx, live, deployGVK, []byte(deployYAML), ApplyOptions{FieldManager: "kubectl"})
	require.NoError(t, err)
	assert.Equal(t, t0, entry(t, out, "kubectl", metav1.ManagedFieldsOperationApply, "").Time.Time)
	assert.Equal(t, live.(*appsv1.Deployment).Spec, out.(*appsv1.Deployment).Spec)
}
