package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// Event reasons of pod creation and deletion (Kubernetes' strings).
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
)

// PodControl creates, deletes and patches pods on behalf of a controller
// and records the events Kubernetes records for it. Tests substitute a fake.
type PodControl interface {
	// CreatePod creates a pod from template in namespace, owned through
	// ref (may be nil), named generateName + 5 random characters (an empty
	// generateName means "<owner name>-"). Events go to owner.
	CreatePod(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, owner runtime.Object,
		ref *metav1.OwnerReference, generateName string) (*corev1.Pod, error)
	// DeletePod deletes a pod; a pod already gone is an error the caller
	// can test with apierrors.IsNotFound.
	DeletePod(ctx context.Context, namespace, name string, owner runtime.Object) error
	// PatchPod applies a strategic merge patch to a pod.
	PatchPod(ctx context.Context, namespace, name string, data []byte) error
}

// RealPodControl is the PodControl over the API.
type RealPodControl struct {
	Client   kubernetes.Interface
	Recorder record.EventRecorder
}

var _ PodControl = (*RealPodControl)(nil)

// CreatePod implements PodControl.
func (r *RealPodControl) CreatePod(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, owner runtime.Object,
	ref *metav1.OwnerReference, generateName string) (*corev1.Pod, error) {
	pod, err := PodFromTemplate(template, owner, ref)
	if err != nil {
		return nil, err
	}
	if generateName != "" {
		pod.GenerateName = generateName
	}
	if len(pod.Labels) == 0 {
		return nil, fmt.Errorf("creating pod for %s: %w", ownerName(owner), ErrNoLabels)
	}
	created, err := r.Client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		// A terminating namespace refuses pods; that is not worth an event.
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			r.Recorder.Eventf(owner, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating: %v", err)
		}
		return nil, fmt.Errorf("creating pod %s* in %s: %w", pod.GenerateName, namespace, err)
	}
	r.Recorder.Eventf(owner, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: %v", created.Name)
	return created, nil
}

// DeletePod implements PodControl.
func (r *RealPodControl) DeletePod(ctx context.Context, namespace, name string, owner runtime.Object) error {
	if err := r.Client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		if !apierrors.IsNotFound(err) {
			r.Recorder.Eventf(owner, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
		}
		return fmt.Errorf("deleting pod %s/%s: %w", namespace, name, err)
	}
	r.Recorder.Eventf(owner, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %v", name)
	return nil
}

// PatchPod implements PodControl.
func (r *RealPodControl) PatchPod(ctx context.Context, namespace, name string, data []byte) error {
	if _, err := r.Client.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patching pod %s/%s: %w", namespace, name, err)
	}
	return nil
}

// ErrNoLabels is returned when a pod template has no labels: such a pod
// could never be selected by its controller.
var ErrNoLabels = errors.New("pod template has no labels")

// PodFromTemplate builds the pod a controller creates from template: the
// template's labels, annotations, finalizers and a copy of its spec, the
// owner reference, and generateName "<owner name>-" (the owner name alone
// when that would not be a valid prefix).
func PodFromTemplate(template *corev1.PodTemplateSpec, owner runtime.Object, ref *metav1.OwnerReference) (*corev1.Pod, error) {
	prefix := ""
	if owner != nil {
		m, err := meta.Accessor(owner)
		if err != nil {
			return nil, fmt.Errorf("pod owner: %w", err)
		}
		prefix = m.GetName() + "-"
		if len(validation.IsDNS1123Subdomain(prefix+"abcde")) != 0 {
			prefix = m.GetName()
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: prefix,
			Labels:       copyMap(template.Labels),
			Annotations:  copyMap(template.Annotations),
			Finalizers:   append([]string(nil), template.Finalizers...),
		},
		Spec: *template.Spec.DeepCopy(),
	}
	if ref != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return pod, nil
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ownerName(owner runtime.Object) string {
	if m, err := meta.Accessor(owner); err == nil {
		return m.GetNamespace() + "/" + m.GetName()
	}
	return "<unknown owner>"
}

// SlowStartBatch calls fn count times in batches of growing size: first
// initialBatch calls in parallel, then twice as many, and so on. It stops
// after the first batch with a failure, so a controller hitting e.g. a
// quota does not send hundreds of doomed requests. It returns how many
// calls succeeded and the first error.
func SlowStartBatch(count, initialBatch int, fn func() error) (int, error) {
	if initialBatch < 1 {
		initialBatch = 1
	}
	remaining, succeeded := count, 0
	for batch := min(remaining, initialBatch); batch > 0; batch = min(2*batch, remaining) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Go(func() {
				if err := fn(); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		failed := len(errs)
		succeeded += batch - failed
		if failed > 0 {
			return succeeded, <-errs
		}
		remaining -= batch
	}
	return succeeded, nil
}

// SlowStartInitialBatch is the first batch size Kubernetes uses.
const SlowStartInitialBatch = 1
