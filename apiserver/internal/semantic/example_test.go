package semantic_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/internal/semantic"
)

// A Comparer answers as apiequality.Semantic.DeepEqual: a Quantity written
// another way is equal, a bound pod is not.
func ExampleComparer_Equal() {
	var c semantic.Comparer
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
	}
	reformatted := pod.DeepCopy()
	reformatted.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000m")
	bound := pod.DeepCopy()
	bound.Spec.NodeName = "node-1"
	fmt.Println(c.Equal(pod, reformatted), c.Equal(pod, bound))
	// Output: true false
}
