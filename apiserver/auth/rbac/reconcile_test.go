package rbac

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/bolt"
)

func openBolt(tb testing.TB) storage.Store {
	tb.Helper()
	st, err := bolt.Open(filepath.Join(tb.TempDir(), "state.db"), scheme.StorageCodec(scheme.New()))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// BenchmarkReconcile measures the bootstrap policy's reconcile on the
// durable store: into an empty store (a cluster's first start) and over
// an unchanged one (every later start).
func BenchmarkReconcile(b *testing.B) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	b.Run("empty", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			st := openBolt(b)
			b.StartTimer()
			require.NoError(b, Reconcile(ctx, st, log))
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		st := openBolt(b)
		require.NoError(b, Reconcile(ctx, st, log))
		for b.Loop() {
			require.NoError(b, Reconcile(ctx, st, log))
		}
	})
}
