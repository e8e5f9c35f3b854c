package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunSmall(t *testing.T) {
	for _, w := range []string{"basic", "spread", "antiaffinity"} {
		t.Run(w, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := run(ctx, config{Workload: w, Nodes: 10, Pods: 40})
			require.NoError(t, err)
			assert.Equal(t, 40, res.Pods)
			assert.Positive(t, res.PodsPerSecond)
			assert.Positive(t, res.P99AttemptMillis)
		})
	}
	_, err := run(context.Background(), config{Workload: "nope"})
	assert.Error(t, err)
}
