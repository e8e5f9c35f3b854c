package engine

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/internal/semantic"
)

// comparer is the no-op check of updates: an update whose result equals
// the stored object under apimachinery's semantic equality, TypeMeta
// aside, writes nothing. semantic.Comparer gives apiequality.Semantic's
// answer, but finds the change of a binding or a status write in well
// under a microsecond instead of walking the whole pod.
type comparer struct {
	semantic.Comparer
}

// unchanged reports whether next, the engine's private copy, equals the
// stored cur apart from TypeMeta.
func (c *comparer) unchanged(cur, next runtime.Object) bool {
	kind := next.GetObjectKind()
	saved := kind.GroupVersionKind()
	kind.SetGroupVersionKind(cur.GetObjectKind().GroupVersionKind())
	defer kind.SetGroupVersionKind(saved)
	return c.Equal(cur, next)
}
