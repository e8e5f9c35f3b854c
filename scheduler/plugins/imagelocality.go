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

var (
	_ scheduler.PreScore = (*ImageLocality)(nil)
	_ scheduler.Scorer   = (*ImageLocality)(nil)
)

// NewImageLocality returns the plugin.
func NewImageLocality() *ImageLocality { return &ImageLocality{} }

// Name returns ImageLocalityName.
func (*ImageLocality) Name() string { return ImageLocalityName }

const imageLocalityStateKey = "PreScore" + ImageLocalityName

// podImages is the pod's images, normalised, with how many nodes hold
// each: the same for every node of a cycle, so PreScore computes them
// once instead of Score for each of hundreds of nodes.
type podImages struct {
	images     []podImage
	containers int
	totalNodes int
}

type podImage struct {
	name     string
	numNodes int
}

func newPodImages(pod *corev1.Pod, snap *scheduler.Snapshot) *podImages {
	pi := &podImages{totalNodes: snap.NumNodes()}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			pi.containers++
			name := scheduler.NormalizeImageName(cs[i].Image)
			pi.images = append(pi.images, podImage{name: name, numNodes: snap.ImageNumNodes(name)})
		}
	}
	return pi
}

// PreScore normalises the pod's image names and counts the nodes holding
// each.
func (*ImageLocality) PreScore(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod, _ []*scheduler.NodeInfo) error {
	s.Write(imageLocalityStateKey, newPodImages(pod, s.Snapshot()))
	return nil
}

// Score sums size × (nodes with the image / all nodes) over the pod's
// images present on the node, then maps it onto 0..100 between the
// thresholds.
func (*ImageLocality) Score(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod, n *scheduler.NodeInfo) (int64, error) {
	pi, err := scheduler.ReadAs[*podImages](s, imageLocalityStateKey)
	if err != nil { // Score called without PreScore
		pi = newPodImages(pod, s.Snapshot())
	}
	var sum int64
	if len(n.Images) > 0 && pi.totalNodes > 0 {
		for _, img := range pi.images {
			if size, ok := n.Images[img.name]; ok {
				sum += int64(float64(size) * float64(img.numNodes) / float64(pi.totalNodes))
			}
		}
	}
	return imageScore(sum, pi.containers), nil
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
