package printers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// testNow is the fixed instant every test table is printed at.
var testNow = time.Date(2026, time.May, 1, 12, 0, 0, 0, time.UTC)

// ago returns the metav1.Time d before testNow.
func ago(d time.Duration) metav1.Time { return metav1.NewTime(testNow.Add(-d)) }

// agoPtr returns a pointer to ago(d).
func agoPtr(d time.Duration) *metav1.Time { t := ago(d); return &t }

// meta returns ObjectMeta named name, created d ago.
func objMeta(name string, d time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(d)}
}

func newTestPrinter(t *testing.T) *Printer {
	t.Helper()
	p, err := New(WithClock(func() time.Time { return testNow }))
	require.NoError(t, err)
	return p
}

// rowOf converts obj to a table and returns its only row, checking that the
// row has one cell per column.
func rowOf(t *testing.T, p *Printer, obj runtime.Object) metav1.TableRow {
	t.Helper()
	table, err := p.ConvertToTable(context.Background(), obj, nil)
	require.NoError(t, err)
	require.Len(t, table.Rows, 1)
	require.Len(t, table.Rows[0].Cells, len(table.ColumnDefinitions), "one cell per column")
	return table.Rows[0]
}

// cellsOf returns the cells of obj's only row.
func cellsOf(t *testing.T, p *Printer, obj runtime.Object) []any {
	t.Helper()
	return rowOf(t, p, obj).Cells
}

// columnNames returns the names of a table's columns, wide ones marked "+".
func columnNames(cols []metav1.TableColumnDefinition) []string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
		if c.Priority > 0 {
			names[i] = "+" + c.Name
		}
	}
	return names
}

func ptr[T any](v T) *T { return &v }
