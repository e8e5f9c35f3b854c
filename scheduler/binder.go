package scheduler

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// APIBinder binds pods through the pods/binding subresource, which sets
// spec.nodeName and the PodScheduled=True condition in one write and
// answers 409 Conflict if the pod is already bound.
type APIBinder struct {
	Client kubernetes.Interface
}

var _ Binder = (*APIBinder)(nil)

// Name is the plugin name kube-scheduler gives its default binder.
func (b *APIBinder) Name() string { return "DefaultBinder" }

// Bind posts a Binding of pod to nodeName, with the pod's UID as a
// precondition.
func (b *APIBinder) Bind(ctx context.Context, pod *corev1.Pod, nodeName string) error {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Annotations: bindingAnnotations(pod)},
		Target:     corev1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	var err error
	if rc, ok := b.Client.CoreV1().RESTClient().(*rest.RESTClient); ok && rc != nil {
		// The request client-go's Pods().Bind sends with empty options,
		// without encoding those options into query parameters first
		// (reflection costing about as much as the rest of the request).
		err = rc.Post().Namespace(pod.Namespace).Resource("pods").Name(pod.Name).SubResource("binding").
			Body(binding).Do(ctx).Error()
	} else { // fakes and other clientsets
		err = b.Client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("binding pod %s/%s to node %s: %w", pod.Namespace, pod.Name, nodeName, err)
	}
	return nil
}
