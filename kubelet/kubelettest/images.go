// Package kubelettest has in-memory stand-ins for the kubelet's image and
// snapshot stages, so the kubelet runs without root, registries or
// overlayfs (together with sandbox/fake for the runtime): Images plays
// kubelet.Images (an image store with a pretend registry behind it),
// Snapshots plays overlay.Snapshotter and kubelet.Unpacker.
package kubelettest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/image"
)

// Images is an in-memory image store. Images added with Add are present
// on the node; images added with AddRemote can be pulled. A pull of
// anything else fails as a registry answering "manifest unknown" would.
// Ensure follows image.Service's pull policies and errors (wrapping
// image.ErrImagePull and friends, so image.Reason works). It is safe for
// concurrent use.
type Images struct {
	mu       sync.Mutex
	local    map[string]*entry
	remote   map[string]*entry
	pulls    map[string]int
	failures map[string]error
	// PullDelay, when set, is how long each pull blocks (from the caller's
	// point of view; it honours ctx).
	PullDelay time.Duration
}

type entry struct {
	meta *image.Image
	img  v1.Image
}

// NewImages returns an empty store.
func NewImages() *Images {
	return &Images{local: map[string]*entry{}, remote: map[string]*entry{}, pulls: map[string]int{}, failures: map[string]error{}}
}

func build(ref string, cfg v1.Config) (*entry, error) {
	img, err := mutate.Config(empty.Image, cfg)
	if err != nil {
		return nil, err
	}
	id, err := img.ConfigName()
	if err != nil {
		return nil, err
	}
	r, err := image.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	size, _ := img.Size()
	meta := &image.Image{ID: id.String(), RepoTags: []string{r.String()}, Size: size,
		RepoDigests: []string{r.Name() + "@" + id.String()}}
	return &entry{meta: meta, img: img}, nil
}

// Add makes an image with cfg present on the node under ref.
func (i *Images) Add(ref string, cfg v1.Config) error {
	e, err := build(ref, cfg)
	if err != nil {
		return err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.local[key(ref)] = e
	return nil
}

// AddRemote makes an image with cfg pullable under ref.
func (i *Images) AddRemote(ref string, cfg v1.Config) error {
	e, err := build(ref, cfg)
	if err != nil {
		return err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.remote[key(ref)] = e
	return nil
}

// FailPulls makes pulls of ref fail with err (nil: stop failing).
func (i *Images) FailPulls(ref string, err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if err == nil {
		delete(i.failures, key(ref))
		return
	}
	i.failures[key(ref)] = err
}

// Pulls returns how many times ref was pulled.
func (i *Images) Pulls(ref string) int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.pulls[key(ref)]
}

// Refs lists the images present on the node.
func (i *Images) Refs() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	var out []string
	for r := range i.local {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

func key(ref string) string {
	if r, err := image.ParseReference(ref); err == nil {
		return r.String()
	}
	return ref
}

// Get returns a present image (image.ErrNotFound otherwise).
func (i *Images) Get(_ context.Context, ref string) (*image.Image, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if e := i.local[key(ref)]; e != nil {
		return e.meta, nil
	}
	return nil, fmt.Errorf("image %q: %w", ref, image.ErrNotFound)
}

// pullError carries a Kubernetes reason like image.Service's errors.
type pullError struct {
	reason, cause error
	msg           string
}

func (e *pullError) Error() string   { return e.msg }
func (e *pullError) Unwrap() []error { return []error{e.reason, e.cause} }

// Ensure applies policy as image.Service.Ensure does.
func (i *Images) Ensure(ctx context.Context, ref string, policy corev1.PullPolicy, _ authn.Keychain) (*image.Image, error) {
	r, err := image.ParseReference(ref)
	if err != nil {
		return nil, &pullError{image.ErrInvalidImageName, err, fmt.Sprintf("Failed to apply default image tag %q: %v", ref, err)}
	}
	if policy == "" {
		policy = image.DefaultPullPolicy(r)
	}
	local, _ := i.Get(ctx, ref)
	switch {
	case policy == corev1.PullNever && local == nil:
		return nil, &pullError{image.ErrImageNeverPull, image.ErrNotFound, fmt.Sprintf("Container image %q is not present with pull policy of Never", ref)}
	case policy != corev1.PullAlways && local != nil:
		return local, nil
	}
	if i.PullDelay > 0 {
		t := time.NewTimer(i.PullDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &pullError{image.ErrImagePull, ctx.Err(), ctx.Err().Error()}
		case <-t.C:
		}
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	k := r.String()
	i.pulls[k]++
	if err := i.failures[k]; err != nil {
		return nil, &pullError{image.ErrImagePull, err, err.Error()}
	}
	e := i.remote[k]
	if e == nil {
		cause := fmt.Errorf("%s: %w", r.Name(), image.ErrManifestUnknown)
		return nil, &pullError{image.ErrImagePull, cause, fmt.Sprintf("failed to pull image %q: %v", ref, cause)}
	}
	i.local[k] = e
	return e.meta, nil
}

// Layers returns the image's layers (none: images here are config only).
func (i *Images) Layers(ctx context.Context, ref string) ([]v1.Layer, error) {
	img, err := i.Open(ctx, ref)
	if err != nil {
		return nil, err
	}
	return img.Layers()
}

// Open returns the present image.
func (i *Images) Open(_ context.Context, ref string) (v1.Image, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if e := i.local[key(ref)]; e != nil {
		return e.img, nil
	}
	return nil, fmt.Errorf("image %q: %w", ref, image.ErrNotFound)
}

// ErrPull is a convenient cause for FailPulls.
var ErrPull = errors.New("registry unavailable")
