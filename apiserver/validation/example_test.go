package validation_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/validation"
)

// A REST handler validates a defaulted object and turns the field errors into
// the 422 Invalid status Kubernetes clients expect.
func ExampleValidator_ValidateCreate() {
	v, err := validation.New(validation.WithNodePortRange(30000, 2768))
	if err != nil {
		panic(err)
	}
	grace := int64(30)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: "nginx:1.27",
				ImagePullPolicy:          corev1.PullIfNotPresent,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resourceMust("1")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resourceMust("500m")},
				},
			}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			DNSPolicy:                     corev1.DNSClusterFirst,
			TerminationGracePeriodSeconds: &grace,
		},
	}
	errs := v.ValidateCreate(pod)
	for _, e := range errs {
		fmt.Println(e)
	}
	fmt.Println(v.NewInvalid(pod, errs))
	// Output:
	// spec.containers[0].resources.requests: Invalid value: "1": must be less than or equal to cpu limit of 500m
	// Pod "web" is invalid: spec.containers[0].resources.requests: Invalid value: "1": must be less than or equal to cpu limit of 500m
}

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) }
