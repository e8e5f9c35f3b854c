package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

// ImageLocalityName is the plugin's name.
const ImageLocalityName = "ImageLocality"

// Thresholds of ImageLocality, as Kubernetes: below 23 MB an image is not
// worth attracting pods; the score saturates at 1000 MB per container.
const (
	mb                    int64 = 1024 * 1024
	minThreshold                = 23 * mb
	maxContainerThreshold       = 1000 * mb
)

// ImageLocality prefers nodes that already have the pod's images, in
// proportion to their size and scaled down for images present on few
// nodes (so that pods do not pile onto the one node that has an image).
type ImageLocality struct{}

var _ scheduler.Scorer = (*ImageLocality)(nil)

// NewImageLocality returns the plugin.
func NewImageLocality() *ImageLocality { return &ImageLocality{} }

// Name returns ImageLocalityName.
func (*ImageLocality) Name() string { return ImageLocalityName }

// Score sums size × (nodes with the image / all nodes) over the pod's
// images present on the node, then maps it onto 0..100 between the
// thresholds.
func (*ImageLocality) Score(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod, n *scheduler.NodeInfo) (int64, error) {
	snap := s.Snapshot()
	total := snap.NumNodes()
	var sum int64
	containers := 0
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			containers++
			name := scheduler.NormalizeImageName(cs[i].Image)
			size, ok := n.Images[name]
			if !ok || total == 0 {
				continue
			}
			sum += int64(float64(size) * float64(snap.ImageNumNodes(name)) / float64(total))
		}
	}
	return imageScore(sum, containers), nil
}

func imageScore(sum int64, containers int) int64 {
	maxThreshold := maxContainerThreshold * int64(containers)
	if sum < minThreshold {
		sum = minThreshold
	} else if sum > maxThreshold {
		sum = maxThreshold
	}
	if maxThreshold <= minThreshold {
		return 0
	}
	return scheduler.MaxNodeScore * (sum - minThreshold) / (maxThreshold - minThreshold)
}
