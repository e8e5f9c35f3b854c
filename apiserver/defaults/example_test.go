package defaults_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/defaults"
)

// Default fills in what a Kubernetes API server would for a minimal pod.
func ExampleDefault() {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "web",
			Image: "nginx",
			Ports: []corev1.ContainerPort{{ContainerPort: 80}},
		}}},
	}
	defaults.Default(pod)

	c := pod.Spec.Containers[0]
	fmt.Println(pod.Spec.RestartPolicy, pod.Spec.DNSPolicy, *pod.Spec.TerminationGracePeriodSeconds, pod.Spec.SchedulerName)
	fmt.Println(c.ImagePullPolicy, c.TerminationMessagePath, c.TerminationMessagePolicy, c.Ports[0].Protocol)
	fmt.Println(defaults.Default(&corev1.Event{}))
	// Output:
	// Always ClusterFirst 30 default-scheduler
	// Always /dev/termination-log File TCP
	// false
}
