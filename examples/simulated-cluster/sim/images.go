package sim

import (
	"context"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/image"
	"github.com/podkit/podkit/kubelet"
	"github.com/podkit/podkit/kubelet/kubelettest"
)

// SimulatedImageConfig is the configuration every image has in a
// simulation: the test program's entrypoint running until stopped, which
// sandbox/fake imitates in memory. A pod's own command or args still
// override it, as on a real node.
var SimulatedImageConfig = v1.Config{Entrypoint: []string{"/bin/testbox"}, Cmd: []string{"sleep", "inf"}}

// images is a node's image store in which every reference can be pulled
// (a pretend registry that has everything) and pulls are instant:
// kubelettest.Images with each new reference published on first use.
type images struct {
	*kubelettest.Images
	mu        sync.Mutex
	published map[string]bool
}

var _ kubelet.Images = (*images)(nil)

func newImages() *images {
	return &images{Images: kubelettest.NewImages(), published: map[string]bool{}}
}

// Ensure publishes ref, then pulls it per policy like any image store.
func (i *images) Ensure(ctx context.Context, ref string, policy corev1.PullPolicy, auth authn.Keychain) (*image.Image, error) {
	i.mu.Lock()
	if !i.published[ref] {
		if err := i.AddRemote(ref, SimulatedImageConfig); err != nil {
			i.mu.Unlock()
			return nil, err
		}
		i.published[ref] = true
	}
	i.mu.Unlock()
	return i.Images.Ensure(ctx, ref, policy, auth)
}
