package plugins

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
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
