package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

// BenchmarkSmallListThenWrite is what admission does for every pod
// create: list a namespace's few limit ranges, then write a pod into a
// tree of 10,000. A list that snapshots the tree makes the write after it
// copy the B-tree nodes on its key's path.
func BenchmarkSmallListThenWrite(b *testing.B) {
	ctx := context.Background()
	e, err := New(Config{})
	require.NoError(b, err)
	defer e.Close()
	const pods = 10000
	for i := range pods {
		_, err := e.Create(ctx, key(fmt.Sprintf("p%05d", i)), pod(fmt.Sprintf("p%05d", i)))
		require.NoError(b, err)
	}
	for i := range 3 {
		_, err := e.Create(ctx, fmt.Sprintf("/registry/limitranges/ns/l%d", i), pod(fmt.Sprintf("l%d", i)))
		require.NoError(b, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		res, err := e.List(ctx, "/registry/limitranges/ns/", storage.ListOptions{ReadOnly: true})
		if err != nil || len(res.Items) != 3 {
			b.Fatal(err, len(res.Items))
		}
		name := fmt.Sprintf("p%05d", i%pods)
		if _, err := e.UpdateOwned(ctx, key(name), func(cur runtime.Object) (runtime.Object, error) {
			p := pod(name)
			p.Labels = map[string]string{"n": fmt.Sprint(i)}
			return p, nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}
