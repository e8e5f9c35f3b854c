package kubelet

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/image"
	"github.com/podkit/podkit/kubelet/status"
	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox"
)

// imageInfo is what starting a container needs of its image.
type imageInfo struct {
	// id is reported as the container's imageID: the repo digest the
	// image was pulled by, else its config digest.
	id      string
	config  sandbox.ImageConfig
	chainID string
}

// ensureImage makes the container's image available as the kubelet's image
// manager does, with its events: InvalidImageName; Never → present or
// ErrImageNeverPull; IfNotPresent → "already present" or a pull; Always →
// a pull; pulls back off per pod and image (ErrImagePull, then
// ImagePullBackOff until the back-off ends). It then reads the image's
// configuration and unpacks its layers. On failure it returns when to try
// again.
func (k *Kubelet) ensureImage(ctx context.Context, w *podWorker, pod *corev1.Pod, c *corev1.Container, keychain func() authn.Keychain) (imageInfo, time.Time, error) {
	st := &w.st
	retry := k.clock.Now().Add(k.cfg.RetryInterval)
	if k.images == nil {
		return imageInfo{}, time.Time{}, nil
	}
	ref := c.Image
	fail := func(reason, msg string, err error) (imageInfo, time.Time, error) {
		st.waiting[c.Name] = status.Waiting{Reason: reason, Message: msg}
		k.containerEvent(pod, c.Name, corev1.EventTypeWarning, EventFailed, "Error: "+reason)
		return imageInfo{}, retry, err
	}
	parsed, err := k.imageMemo.parse(ref)
	if err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: %v", ref, err)
		k.containerEvent(pod, c.Name, corev1.EventTypeWarning, EventInspectFailed, msg)
		return fail(status.ReasonInvalidImageName, msg, err)
	}
	policy := c.ImagePullPolicy
	if policy == "" {
		policy = image.DefaultPullPolicy(parsed)
	}

	var img *image.Image
	if policy != corev1.PullAlways {
		img, err = k.images.Get(ctx, ref)
		switch {
		case err == nil:
			k.containerEvent(pod, c.Name, corev1.EventTypeNormal, EventPulled, fmt.Sprintf("Container image %q already present on machine", ref))
		case !errors.Is(err, image.ErrNotFound):
			msg := fmt.Sprintf("Failed to inspect image %q: %v", ref, err)
			k.containerEvent(pod, c.Name, corev1.EventTypeWarning, EventInspectFailed, msg)
			return fail("ImageInspectError", msg, err)
		case policy == corev1.PullNever:
			msg := status.ErrImageNeverPullMessage(ref)
			k.containerEvent(pod, c.Name, corev1.EventTypeWarning, EventErrImageNeverPull, msg)
			return fail(status.ReasonErrImageNeverPull, msg, err)
		}
	}
	if img == nil {
		key := string(pod.UID) + "/" + ref
		if in, end := k.pullBackoff.InBackOffSinceUpdate(key); in {
			msg := status.ImagePullBackOffMessage(ref)
			k.containerEvent(pod, c.Name, corev1.EventTypeNormal, EventBackOff, msg)
			st.waiting[c.Name] = status.Waiting{Reason: status.ReasonImagePullBackOff, Message: msg}
			k.containerEvent(pod, c.Name, corev1.EventTypeWarning, EventFailed, "Error: "+status.ReasonImagePullBackOff)
			return imageInfo{}, end, errBackOff
		}
		k.containerEvent(pod, c.Name, corev1.EventTypeNormal, EventPulling, fmt.Sprintf("Pulling image %q", ref))
		t0 := k.clock.Now()
		img, err = k.images.Ensure(ctx, ref, policy, keychain())
		took := k.clock.Since(t0)
		if err != nil {
			k.metrics.imagePulls.WithLabelValues("failure").Observe(took.Seconds())
			k.containerEvent(pod, c.Name, corev1.EventTypeWarning, EventFailed, fmt.Sprintf("Failed to pull image %q: %v", ref, err))
			k.pullBackoff.Next(key, k.clock.Now())
			reason := image.Reason(err)
			if reason == "" {
				reason = status.ReasonErrImagePull
			}
			return fail(reason, err.Error(), err)
		}
		k.metrics.imagePulls.WithLabelValues("success").Observe(took.Seconds())
		st.pullTime += took
		d := took.Truncate(time.Millisecond)
		k.containerEvent(pod, c.Name, corev1.EventTypeNormal, EventPulled,
			fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.", ref, d, d, img.Size))
	}

	t1 := k.clock.Now()
	info, err := k.imageInfo(ctx, ref, img)
	if err != nil {
		msg := err.Error()
		k.containerEvent(pod, c.Name, corev1.EventTypeWarning, EventFailed, "Error: "+msg)
		st.waiting[c.Name] = status.Waiting{Reason: status.ReasonCreateContainerError, Message: msg}
		return imageInfo{}, retry, err
	}
	k.step(st, StepImage, t1)
	k.birthImage(st, c.Name, img)
	return info, time.Time{}, nil
}

// imageInfo reads an image's runtime configuration and unpacks its layers
// (the Unpacker skips layers already unpacked).
func (k *Kubelet) imageInfo(ctx context.Context, ref string, img *image.Image) (imageInfo, error) {
	info := imageInfo{id: img.ID}
	if len(img.RepoDigests) > 0 {
		info.id = img.RepoDigests[0]
	}
	if c, ok := k.imageMemo.config(img.ID); ok {
		info.config = c
	} else {
		v1img, err := k.images.Open(ctx, ref)
		if err != nil {
			return info, fmt.Errorf("opening image %q: %w", ref, err)
		}
		cf, err := v1img.ConfigFile()
		if err != nil {
			return info, fmt.Errorf("reading the configuration of image %q: %w", ref, err)
		}
		info.config = sandbox.ImageConfig{
			Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd, Env: cf.Config.Env,
			WorkingDir: cf.Config.WorkingDir, User: cf.Config.User, StopSignal: cf.Config.StopSignal,
		}
		k.imageMemo.setConfig(img.ID, info.config)
	}
	if k.snapshots == nil || k.unpacker == nil {
		return info, nil
	}
	layers, err := k.images.Layers(ctx, ref)
	if err != nil {
		return info, fmt.Errorf("reading the layers of image %q: %w", ref, err)
	}
	ls := make([]overlay.Layer, len(layers))
	for i, l := range layers {
		ls[i] = l
	}
	chain, err := k.unpacker.Unpack(ctx, ls)
	if err != nil {
		return info, fmt.Errorf("unpacking image %q: %w", ref, err)
	}
	info.chainID = chain
	return info, nil
}

// pullKeychain builds the pod's keyring from its image pull secrets; those
// that cannot be read are reported in an event, as the kubelet does.
func (k *Kubelet) pullKeychain(ctx context.Context, pod *corev1.Pod) authn.Keychain {
	if len(pod.Spec.ImagePullSecrets) == 0 {
		return nil
	}
	var secrets []corev1.Secret
	var failed []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, err := k.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s/%s", pod.Namespace, ref.Name))
			continue
		}
		secrets = append(secrets, *s)
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		k.event(pod, corev1.EventTypeWarning, EventFailedPullSecret,
			fmt.Sprintf("Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", ")))
	}
	kr, err := image.KeyringFromSecrets(secrets)
	if err != nil {
		k.log.Warn("image pull secrets", "pod", podKey(pod), "err", err)
	}
	if kr == nil {
		return nil
	}
	return kr
}
