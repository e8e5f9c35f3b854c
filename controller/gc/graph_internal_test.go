package gc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func ref(kind, name string, uid types.UID, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, BlockOwnerDeletion: ptr.To(block)}
}

func TestReferencesDiffs(t *testing.T) {
	a, b, c := ref("ReplicaSet", "a", "1", true), ref("ReplicaSet", "b", "2", true), ref("ReplicaSet", "c", "3", false)
	bUnblocked := ref("ReplicaSet", "b", "2", false)
	for _, tc := range []struct {
		name           string
		old, cur       []metav1.OwnerReference
		added, removed []metav1.OwnerReference
		changed        []refPair
	}{
		{name: "same", old: []metav1.OwnerReference{a}, cur: []metav1.OwnerReference{a}},
		{name: "added", old: []metav1.OwnerReference{a}, cur: []metav1.OwnerReference{a, c}, added: []metav1.OwnerReference{c}},
		{name: "removed", old: []metav1.OwnerReference{a, b}, cur: []metav1.OwnerReference{b}, removed: []metav1.OwnerReference{a}},
		{name: "changed", old: []metav1.OwnerReference{b}, cur: []metav1.OwnerReference{bUnblocked}, changed: []refPair{{old: b, cur: bUnblocked}}},
		{name: "from nothing", cur: []metav1.OwnerReference{a}, added: []metav1.OwnerReference{a}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			added, removed, changed := referencesDiffs(tc.old, tc.cur)
			assert.Equal(t, tc.added, added)
			assert.Equal(t, tc.removed, removed)
			assert.Equal(t, tc.changed, changed)
		})
	}
}

func dependent(ns string, owners ...metav1.OwnerReference) *node {
	n := newNode(objectReference{APIVersion: "v1", Kind: "Pod", Name: "p-" + ns, UID: types.UID("dep-" + ns), Namespace: ns}, true)
	n.owners = owners
	return n
}

func TestPartitionDependents(t *testing.T) {
	owner := objectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "1", Namespace: "a"}
	good := dependent("a", ref("ReplicaSet", "rs", "1", true))
	wrongKind := dependent("a", ref("Deployment", "rs", "1", true))
	otherNS := dependent("b", ref("ReplicaSet", "rs", "1", true))
	matching, nonmatching := partitionDependents([]*node{good, wrongKind, otherNS}, owner)
	assert.Equal(t, []*node{good}, matching)
	assert.ElementsMatch(t, []*node{wrongKind, otherNS}, nonmatching)

	// A cluster-scoped owner matches dependents in any namespace.
	clusterOwner := objectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "1"}
	matching, nonmatching = partitionDependents([]*node{good, otherNS}, clusterOwner)
	assert.ElementsMatch(t, []*node{good, otherNS}, matching)
	assert.Empty(t, nonmatching)
}

func TestAlternateOwnerIdentity(t *testing.T) {
	absent := objectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "1", Namespace: "a"}
	asDeployment := dependent("a", ref("Deployment", "rs", "1", true))
	asStatefulSet := dependent("a", ref("StatefulSet", "rs", "1", true))
	alt := alternateOwnerIdentity([]*node{asDeployment, asStatefulSet, dependent("a", ref("ReplicaSet", "rs", "1", true))}, absent)
	if assert.NotNil(t, alt) {
		// Sorted after ReplicaSet: StatefulSet; else the first: Deployment.
		assert.Equal(t, "StatefulSet", alt.Kind)
	}
	alt = alternateOwnerIdentity([]*node{asDeployment}, *alt)
	if assert.NotNil(t, alt) {
		assert.Equal(t, "Deployment", alt.Kind, "wraps around to the first alternate")
	}
	assert.Nil(t, alternateOwnerIdentity([]*node{dependent("a", ref("ReplicaSet", "rs", "1", true))}, absent))
}

func TestBlockingDependents(t *testing.T) {
	owner := newNode(objectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "1", Namespace: "a"}, true)
	blocking := dependent("a", ref("ReplicaSet", "rs", "1", true))
	loose := dependent("b", ref("ReplicaSet", "rs", "1", false))
	owner.addDependent(blocking)
	owner.addDependent(loose)
	assert.Equal(t, []*node{blocking}, owner.blockingDependents())
}

func TestAbsentCacheBounded(t *testing.T) {
	c := newAbsentCache(2)
	a, b, d := objectReference{UID: "a"}, objectReference{UID: "b"}, objectReference{UID: "d"}
	c.add(a)
	c.add(b)
	c.add(a) // refreshes a
	c.add(d) // evicts b, the oldest
	assert.True(t, c.has(a))
	assert.False(t, c.has(b))
	assert.True(t, c.has(d))
}

func TestStartsDeletionWith(t *testing.T) {
	now := metav1.Now()
	marked := &metav1.ObjectMeta{DeletionTimestamp: &now, Finalizers: []string{metav1.FinalizerOrphanDependents}}
	plain := &metav1.ObjectMeta{}
	assert.True(t, startsDeletionWith(nil, marked, metav1.FinalizerOrphanDependents), "first seen marked")
	assert.True(t, startsDeletionWith(plain, marked, metav1.FinalizerOrphanDependents))
	assert.False(t, startsDeletionWith(marked, marked, metav1.FinalizerOrphanDependents), "already started")
	assert.False(t, startsDeletionWith(nil, marked, metav1.FinalizerDeleteDependents))
	assert.False(t, startsDeletionWith(nil, plain, metav1.FinalizerOrphanDependents))
}
