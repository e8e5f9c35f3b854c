package fieldmanager

import (
	"testing"

	"github.com/stretchr/testify/assert"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/podkit/podkit/apiserver/scheme"
)

func TestDefaultResetFields(t *testing.T) {
	p := fieldpath.MakePathOrDie
	tests := []struct {
		name string
		gvk  schema.GroupVersionKind
		sub  string
		want *fieldpath.Set
	}{
		{"deployment main", deployGVK, "", fieldpath.NewSet(p("status"))},
		{"deployment status", deployGVK, "status", fieldpath.NewSet(p("spec"), p("metadata", "labels"))},
		{"pod status", podGVK, "status", fieldpath.NewSet(p("spec"), p("metadata", "deletionTimestamp"), p("metadata", "ownerReferences"))},
		{"job status", batchv1.SchemeGroupVersion.WithKind("Job"), "status", fieldpath.NewSet(p("spec"))},
		{"configmap has no status", cmGVK, "", nil},
		{"scale resets nothing", deployGVK, "scale", nil},
		{"unknown kind", schema.GroupVersionKind{Group: "x", Version: "v1", Kind: "Y"}, "", nil},
	}
	reset := DefaultResetFields(scheme.New())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reset(tt.gvk, tt.sub)
			if tt.want == nil {
				assert.Nil(t, got)
				return
			}
			if assert.NotNil(t, got) {
				assert.True(t, tt.want.Equals(got), "got %v", got)
			}
		})
	}
}
