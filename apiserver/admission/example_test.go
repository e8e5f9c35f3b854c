package admission_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/defaults"
)

// labelInjector is a custom mutating plugin: it stamps every new object
// with the team that owns the cluster.
type labelInjector struct{ team string }

func (labelInjector) Name() string                        { return "label-injector" }
func (labelInjector) Handles(op admission.Operation) bool { return op == admission.Create }

func (l labelInjector) Admit(_ context.Context, a *admission.Attributes) error {
	obj, err := meta.Accessor(a.Object)
	if err != nil {
		return fmt.Errorf("not an object: %w", err)
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["example.com/team"] = l.team
	obj.SetLabels(labels)
	return nil
}

// errUnpinned is what the custom validator rejects; callers can match it
// with errors.Is through the API error the chain returns.
var errUnpinned = errors.New("image tags must be pinned")

// A chain with the Defaulter, a custom Admitter and a custom Validator, as
// the API server runs it for every write: Admit, then the object's own
// validation, then Validate.
func ExampleNewChain() {
	pinned := admission.ValidateFunc(func(_ context.Context, a *admission.Attributes) error {
		pod, ok := a.Object.(*corev1.Pod)
		if !ok {
			return nil
		}
		for _, c := range pod.Spec.Containers {
			if defaults.ImageTag(c.Image) == "latest" {
				return fmt.Errorf("container %s: %w", c.Name, errUnpinned)
			}
		}
		return nil
	})
	chain, err := admission.NewChain(
		[]admission.Admitter{admission.NewDefaulter(), labelInjector{team: "payments"}},
		[]admission.Validator{pinned},
	)
	if err != nil {
		panic(err)
	}

	create := func(name, image string) (*corev1.Pod, error) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
		}
		a := &admission.Attributes{
			Operation: admission.Create,
			Kind:      corev1.SchemeGroupVersion.WithKind("Pod"),
			Resource:  corev1.SchemeGroupVersion.WithResource("pods"),
			Namespace: "shop", Name: name, Object: pod,
		}
		ctx := context.Background()
		if err := chain.Admit(ctx, a); err != nil {
			return nil, err
		}
		return pod, chain.Validate(ctx, a)
	}

	pod, err := create("checkout", "registry.example.com/checkout:1.4.2")
	fmt.Println(err, pod.Labels["example.com/team"], pod.Spec.RestartPolicy, pod.Spec.Containers[0].ImagePullPolicy)

	_, err = create("cart", "registry.example.com/cart")
	fmt.Println(err)
	fmt.Println(errors.Is(err, errUnpinned))

	// Output:
	// <nil> payments Always IfNotPresent
	// pods "cart" is forbidden: admission plugin "validating#0" denied the request: container app: image tags must be pinned
	// true
}
