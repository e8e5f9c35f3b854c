package watchcache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

func TestConvert(t *testing.T) {
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}}}
	db := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: map[string]string{"app": "db"}}}
	isWeb := func(o runtime.Object) bool { return o.(*corev1.Pod).Labels["app"] == "web" }
	for _, tc := range []struct {
		name      string
		typ       watch.EventType
		obj, prev runtime.Object
		pred      func(runtime.Object) bool
		want      watch.EventType // "" for none
		wantObj   runtime.Object
	}{
		{"no predicate", watch.Modified, db, web, nil, watch.Modified, db},
		{"added, matching", watch.Added, web, nil, isWeb, watch.Added, web},
		{"added, not matching", watch.Added, db, nil, isWeb, "", nil},
		{"stays in", watch.Modified, web, web, isWeb, watch.Modified, web},
		{"enters", watch.Modified, web, db, isWeb, watch.Added, web},
		{"leaves: DELETED with the previous state", watch.Modified, db, web, isWeb, watch.Deleted, web},
		{"stays out", watch.Modified, db, db, isWeb, "", nil},
		{"deleted, matching", watch.Deleted, web, web, isWeb, watch.Deleted, web},
		{"deleted, not matching", watch.Deleted, db, db, isWeb, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, ok := convert(&Event{Type: tc.typ, Object: tc.obj, PrevObject: tc.prev, Revision: 42}, tc.pred)
			if tc.want == "" {
				assert.False(t, ok)
				return
			}
			assert.True(t, ok)
			assert.Equal(t, tc.want, ev.Type)
			if tc.typ == watch.Modified && tc.want == watch.Deleted {
				// A copy of the previous state at the event's revision.
				assert.Equal(t, tc.wantObj.(metav1.Object).GetLabels(), ev.Object.(metav1.Object).GetLabels())
				assert.Equal(t, "42", ev.Object.(metav1.Object).GetResourceVersion())
				return
			}
			assert.Same(t, tc.wantObj, ev.Object)
		})
	}
}
