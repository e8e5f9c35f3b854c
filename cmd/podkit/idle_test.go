package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPageOutBinary(t *testing.T) {
	n, err := pageOutBinary()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 1, "the test binary's code mapping")
	// The process goes on running the code it paged out: it faults back.
	n, err = pageOutBinary()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 1)
}

func TestTrimFreesOnlyWhenGrown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grow  uint64
		frees bool
	}{
		{"grew beyond the slack", 5 << 20, true},
		{"grew within the slack", 1 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var level, frees, reads atomic.Uint64
			level.Store(100 << 20)
			resident := func() uint64 {
				// Grows once, after the baseline was read.
				if reads.Add(1) == 2 {
					level.Add(tc.grow)
				}
				return level.Load()
			}
			free := func() { frees.Add(1); level.Store(100 << 20) }
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); trim(ctx, time.Millisecond, 4<<20, resident, free) }()
			require.Eventually(t, func() bool { return reads.Load() >= 5 }, time.Minute, time.Millisecond)
			cancel()
			<-done
			if tc.frees {
				assert.Equal(t, uint64(1), frees.Load())
			} else {
				assert.Zero(t, frees.Load())
			}
		})
	}
}
