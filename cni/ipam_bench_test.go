package cni

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"
)

// BenchmarkIPAMAllocateRelease measures one allocation and its release
// with 50 other addresses held, on the state directory's filesystem.
func BenchmarkIPAMAllocateRelease(b *testing.B) {
	p, err := NewIPAM(filepath.Join(b.TempDir(), "net"), netip.MustParsePrefix("10.251.0.0/16"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range 50 {
		if _, err := p.Allocate(ctx, fmt.Sprintf("held%d", i), "eth0"); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("c%d", i)
		if _, err := p.Allocate(ctx, id, "eth0"); err != nil {
			b.Fatal(err)
		}
		if err := p.Release(ctx, id, "eth0"); err != nil {
			b.Fatal(err)
		}
	}
}
