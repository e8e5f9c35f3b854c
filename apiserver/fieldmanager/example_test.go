package fieldmanager_test

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/podkit/podkit/apiserver/fieldmanager"
	"github.com/podkit/podkit/apiserver/scheme"
)

func ExampleManager_Apply() {
	clock := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	m, err := fieldmanager.New(scheme.New(), fieldmanager.WithClock(clock))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")

	// kubectl apply --server-side of a new Deployment: live is nil.
	manifest := []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: nginx}]}
`)
	obj, _, err := m.Apply(ctx, nil, gvk, manifest, fieldmanager.ApplyOptions{FieldManager: "kubectl"})
	if err != nil {
		panic(err)
	}
	d := obj.(*appsv1.Deployment)
	e := d.ManagedFields[0]
	fmt.Println(e.Manager, e.Operation, e.APIVersion, e.Time.UTC().Format(time.RFC3339))

	// Another manager changing the replicas kubectl owns conflicts...
	d.UID, d.ResourceVersion = "uid-1", "1" // as stored
	scale := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":5}}`)
	_, _, err = m.Apply(ctx, d, gvk, scale, fieldmanager.ApplyOptions{FieldManager: "autoscaler"})
	fmt.Println(err)

	// ...unless it forces.
	obj, _, err = m.Apply(ctx, d, gvk, scale, fieldmanager.ApplyOptions{FieldManager: "autoscaler", Force: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(*obj.(*appsv1.Deployment).Spec.Replicas)
	// Output:
	// kubectl Apply apps/v1 2026-01-02T03:04:05Z
	// Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas
	// 5
}

func ExampleManagerName() {
	fmt.Println(fieldmanager.ManagerName("", "kubectl/v1.33.1 (linux/amd64) kubernetes/8adc0f0"))
	fmt.Println(fieldmanager.ManagerName("kubectl-edit", "kubectl/v1.33.1 (linux/amd64) kubernetes/8adc0f0"))
	// Output:
	// kubectl
	// kubectl-edit
}
