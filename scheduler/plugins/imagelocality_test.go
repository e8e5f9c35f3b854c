package plugins

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

func TestImageLocality(t *testing.T) {
	nodes := []*corev1.Node{
		node("big").image(500*mb, "registry.io/app:v1", "registry.io/app@sha256:abc").image(40*mb, "tiny:latest").obj(),
		node("also").image(500*mb, "registry.io/app:v1").obj(),
		node("none").obj(),
		node("small").image(40*mb, "tiny").obj(),
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want map[string]int64
	}{
		// app:v1 on 2 of 4 nodes: 500MB × 2/4 = 250MB; (250-23)/(1000-23) → 23
		{"large image on half the nodes", pod("p").image("registry.io/app:v1").obj(),
			map[string]int64{"big": 23, "also": 23, "none": 0, "small": 0}},
		// tiny (no tag = latest) on 2 of 4 nodes: 20MB < 23MB threshold → 0
		{"small images do not count", pod("p").image("tiny").obj(),
			map[string]int64{"big": 0, "also": 0, "none": 0, "small": 0}},
		{"image absent everywhere", pod("p").image("other:1").obj(),
			map[string]int64{"big": 0, "also": 0, "none": 0, "small": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runScore(NewImageLocality(), tt.pod, nodes, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestImageScoreBounds(t *testing.T) {
	assert.Equal(t, int64(0), imageScore(0, 1))
	assert.Equal(t, int64(100), imageScore(5000*mb, 1))
	assert.Equal(t, int64(50), imageScore(minThreshold+(maxContainerThreshold-minThreshold)/2, 1))
	assert.Equal(t, int64(0), imageScore(5000*mb, 0))
}

// TestImageLocalityScoreWithoutPreScore: a caller that skips PreScore gets
// the same scores (the plugin computes the pod's images itself).
func TestImageLocalityScoreWithoutPreScore(t *testing.T) {
	nodes := []*corev1.Node{
		node("big").image(500*mb, "registry.io/app:v1").obj(),
		node("also").image(500*mb, "registry.io/app:v1").obj(),
		node("none").obj(),
	}
	p := pod("p").image("registry.io/app:v1").obj()
	withPreScore, err := runScore(NewImageLocality(), p, nodes, nil)
	require.NoError(t, err)
	snap := scheduler.NewSnapshot(nil, nodes)
	s := scheduler.NewCycleState(snap)
	for _, ni := range snap.List() {
		got, err := NewImageLocality().Score(context.Background(), s, p, ni)
		require.NoError(t, err)
		assert.Equal(t, withPreScore[ni.Name()], got, ni.Name())
	}
	assert.Equal(t, int64(31), withPreScore["big"]) // 500MB × 2/3 ≈ 333MB: 100 × (333-23)/(1000-23)
}
