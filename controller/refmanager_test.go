package controller

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var rsGVK = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

func owner(deleting bool) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "rs-uid"}}
	if deleting {
		now := metav1.NewTime(t0)
		rs.DeletionTimestamp = &now
	}
	return rs
}

func TestRefManagerClaim(t *testing.T) {
	ours := *OwnerRef(owner(false), rsGVK)
	theirs := metav1.OwnerReference{APIVersion: "v1", Kind: "ReplicationController", Name: "rc", UID: "rc-uid", Controller: ptrTrue()}
	for _, tc := range []struct {
		name          string
		ownerDeleting bool
		podDeleting   bool
		ref           *metav1.OwnerReference
		matches       bool
		namespace     string
		canAdopt      error
		adoptErr      error
		want          bool
		wantAdopt     bool
		wantRelease   bool
		wantErr       bool
	}{
		{name: "owned and matching", ref: &ours, matches: true, want: true},
		{name: "owned, not matching: released", ref: &ours, wantRelease: true},
		{name: "owned, not matching, owner deleting: kept", ref: &ours, ownerDeleting: true},
		{name: "someone else's", ref: &theirs, matches: true},
		{name: "orphan matching: adopted", matches: true, want: true, wantAdopt: true},
		{name: "orphan not matching", matches: false},
		{name: "orphan being deleted", matches: true, podDeleting: true},
		{name: "owner being deleted adopts nothing", matches: true, ownerDeleting: true},
		{name: "other namespace", matches: true, namespace: "elsewhere"},
		{name: "cannot adopt", matches: true, canAdopt: errors.New("stale"), wantErr: true},
		{name: "adopt finds it gone", matches: true, adoptErr: apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p"), wantAdopt: true},
		{name: "adopt fails", matches: true, adoptErr: errors.New("boom"), wantAdopt: true, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod("p")
			if tc.namespace != "" {
				p.Namespace = tc.namespace
			}
			if tc.ref != nil {
				p.OwnerReferences = []metav1.OwnerReference{*tc.ref}
			}
			if tc.podDeleting {
				now := metav1.NewTime(t0)
				p.DeletionTimestamp = &now
			}
			m := &RefManager{Controller: owner(tc.ownerDeleting), Kind: rsGVK, Selector: labels.Everything(),
				CanAdopt: func(context.Context) error { return tc.canAdopt }}
			var adopted, released bool
			got, err := m.Claim(context.Background(), p, func(metav1.Object) bool { return tc.matches },
				func(context.Context, metav1.Object) error { adopted = true; return tc.adoptErr },
				func(context.Context, metav1.Object) error { released = true; return nil })
			assert.Equal(t, tc.wantErr, err != nil, "err %v", err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantAdopt, adopted, "adopted")
			assert.Equal(t, tc.wantRelease, released, "released")
		})
	}
}

func ptrTrue() *bool { b := true; return &b }

func TestCanAdoptCalledOnce(t *testing.T) {
	calls := 0
	m := &RefManager{Controller: owner(false), Kind: rsGVK, Selector: labels.Everything(),
		CanAdopt: func(context.Context) error { calls++; return nil }}
	for range 3 {
		ok, err := m.Claim(context.Background(), pod("p"), func(metav1.Object) bool { return true },
			func(context.Context, metav1.Object) error { return nil }, nil)
		require.NoError(t, err)
		assert.True(t, ok)
	}
	assert.Equal(t, 1, calls)
}

func TestPatches(t *testing.T) {
	var adopt map[string]map[string]any
	require.NoError(t, json.Unmarshal(AdoptPatch(OwnerRef(owner(false), rsGVK), "pod-uid"), &adopt))
	assert.Equal(t, "pod-uid", adopt["metadata"]["uid"])
	refs := adopt["metadata"]["ownerReferences"].([]any)
	require.Len(t, refs, 1)
	ref := refs[0].(map[string]any)
	assert.Equal(t, map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-uid",
		"controller": true, "blockOwnerDeletion": true}, ref)

	assert.JSONEq(t, `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"rs-uid"}],"uid":"pod-uid"}}`,
		string(ReleasePatch("rs-uid", "pod-uid")))
}

func TestRecheckDeletionTimestamp(t *testing.T) {
	live := owner(false)
	ok := RecheckDeletionTimestamp(FreshUID("rs-uid", func(context.Context) (metav1.Object, error) { return live, nil }))
	assert.NoError(t, ok(context.Background()))
	recreated := RecheckDeletionTimestamp(FreshUID("old-uid", func(context.Context) (metav1.Object, error) { return live, nil }))
	assert.ErrorIs(t, recreated(context.Background()), ErrCannotAdopt)
	deleting := RecheckDeletionTimestamp(func(context.Context) (metav1.Object, error) { return owner(true), nil })
	assert.ErrorIs(t, deleting(context.Background()), ErrCannotAdopt)
}

func TestPodFromTemplate(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"}, Finalizers: []string{"f"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}},
	}
	ref := OwnerRef(owner(false), rsGVK)
	p, err := PodFromTemplate(tmpl, owner(false), ref)
	require.NoError(t, err)
	assert.Equal(t, "web-", p.GenerateName)
	assert.Equal(t, tmpl.Labels, p.Labels)
	assert.Equal(t, tmpl.Annotations, p.Annotations)
	assert.Equal(t, []string{"f"}, p.Finalizers)
	assert.Equal(t, []metav1.OwnerReference{*ref}, p.OwnerReferences)
	p.Labels["x"] = "y"
	p.Spec.Containers[0].Image = "other"
	assert.Len(t, tmpl.Labels, 1, "the template is not shared")
	assert.Equal(t, "img", tmpl.Spec.Containers[0].Image)
}
