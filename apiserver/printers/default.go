package printers

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// defaultHandler is the table of kinds without a dedicated layout (Role,
// ClusterRole, LimitRange, custom objects, …), Kubernetes' default table
// convertor: NAME and CREATED AT, the creation time in RFC 3339 UTC.
func defaultHandler() *handler {
	doc := metav1.ObjectMeta{}.SwaggerDoc()
	return &handler{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Created At", "date", doc["creationTimestamp"]),
		},
		row: func(_ *cellContext, obj runtime.Object) ([]any, []metav1.TableRowCondition, error) {
			m, err := meta.Accessor(obj)
			if err != nil {
				return nil, nil, fmt.Errorf("printers: %T has no object metadata: %w", obj, ErrNotConvertible)
			}
			return []any{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}, nil, nil
		},
	}
}
