package apiserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A pod watch requiring one spec.nodeName (the kubelet's) is indexed by
// node; any other selection is not.
func TestWatchIndex(t *testing.T) {
	var pods, nodes *Resource
	for _, r := range DefaultResources() {
		switch r.GroupResource() {
		case schema.GroupResource{Resource: "pods"}:
			pods = r
		case schema.GroupResource{Resource: "nodes"}:
			nodes = r
		}
	}
	require.NotNil(t, pods)
	require.NotNil(t, nodes)
	for _, tc := range []struct {
		res    *Resource
		fields string
		value  string
		ok     bool
	}{
		{pods, "spec.nodeName=n1", "n1", true},
		{pods, "spec.nodeName==n1,status.phase!=Succeeded", "n1", true},
		{pods, "spec.nodeName=", "", true},
		{pods, "spec.nodeName!=n1", "", false},
		{pods, "status.phase=Running", "", false},
		{pods, "", "", false},
		{nodes, "metadata.name=n1", "", false},
	} {
		t.Run(tc.res.Resource+"?"+tc.fields, func(t *testing.T) {
			sel, err := parseSelection(tc.res, "", tc.fields)
			require.NoError(t, err)
			ix := watchIndex(tc.res, sel)
			if !tc.ok {
				assert.Nil(t, ix)
				return
			}
			require.NotNil(t, ix)
			assert.Equal(t, tc.value, ix.Value)
			pod := &corev1.Pod{Spec: corev1.PodSpec{NodeName: tc.value}}
			assert.Equal(t, tc.value, ix.Func(pod))
			assert.True(t, sel.predicate()(pod), "the predicate accepts a pod of the indexed value")
			pod.Spec.NodeName = "elsewhere"
			assert.False(t, sel.predicate()(pod), "and nothing else")
		})
	}
}
