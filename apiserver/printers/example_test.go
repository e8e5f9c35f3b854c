package printers_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/printers"
)

func ExamplePrinter_ConvertToTable() {
	now := time.Date(2026, time.May, 1, 12, 0, 0, 0, time.UTC)
	p, err := printers.New(printers.WithClock(func() time.Time { return now }))
	if err != nil {
		panic(err)
	}

	pods := &corev1.PodList{Items: []corev1.Pod{{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-42 * time.Minute))},
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			PodIPs: []corev1.PodIP{{IP: "10.244.0.7"}},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", Ready: true, RestartCount: 2,
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(now.Add(-5 * time.Minute))}},
			}},
		},
	}}}

	table, err := p.ConvertToTable(context.Background(), pods, &metav1.TableOptions{})
	if err != nil {
		panic(err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, fmt.Sprintf("%s(p%d)", c.Name, c.Priority))
	}
	fmt.Println(strings.Join(columns, " "))
	fmt.Printf("%q\n", table.Rows[0].Cells)
	fmt.Println(table.Rows[0].Object.Object.GetObjectKind().GroupVersionKind().Kind)
	// Output:
	// Name(p0) Ready(p0) Status(p0) Restarts(p0) Age(p0) IP(p1) Node(p1) Nominated Node(p1) Readiness Gates(p1)
	// ["web-1" "1/1" "Running" "2 (5m ago)" "42m" "10.244.0.7" "node-1" "<none>" "<none>"]
	// PartialObjectMetadata
}
