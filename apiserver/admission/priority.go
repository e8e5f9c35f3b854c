package admission

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/storage"
)

// PriorityName names the Priority plugin.
const PriorityName = "Priority"

// The priority classes Kubernetes creates at bootstrap. Priority resolves
// them even when they are not (yet) stored.
var systemPriorityClasses = map[string]int32{
	"system-node-critical":    2000001000,
	"system-cluster-critical": 2000000000,
}

// Priority is Kubernetes' Priority admission plugin. On pod creation it
// resolves spec.priority (and spec.preemptionPolicy) from
// spec.priorityClassName, or from the cluster's global default class, or
// to 0 and PreemptLowerPriority when there is none; a pod naming a class
// that does not exist is rejected with 403 (`no PriorityClass with name x
// was found`), and so is a pod stating a priority that disagrees with its
// class. On update it keeps the values set at creation. As a validator it
// lets only one PriorityClass be the global default.
type Priority struct {
	classes ObjectReader
}

var (
	_ Admitter  = (*Priority)(nil)
	_ Validator = (*Priority)(nil)
	_ Handler   = (*Priority)(nil)
	_ Namer     = (*Priority)(nil)
)

// PriorityConfig configures NewPriority.
type PriorityConfig struct {
	// PriorityClasses reads and lists priority classes. Required.
	PriorityClasses ObjectReader
}

// NewPriority returns the Priority plugin.
func NewPriority(cfg PriorityConfig) (*Priority, error) {
	if cfg.PriorityClasses == nil {
		return nil, errors.New("admission: Priority needs a priority class store")
	}
	return &Priority{classes: cfg.PriorityClasses}, nil
}

// Name implements Namer.
func (*Priority) Name() string { return PriorityName }

// Handles implements Handler: create and update.
func (*Priority) Handles(op Operation) bool { return op == Create || op == Update }

// Admit resolves a pod's priority.
func (p *Priority) Admit(ctx context.Context, a *Attributes) error {
	if a.Subresource != "" || a.Resource.GroupResource() != podsGR {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest("resource was marked with kind Pod but was unable to be converted")
	}
	if a.Operation == Update {
		if old, ok := a.OldObject.(*corev1.Pod); ok {
			if pod.Spec.Priority == nil {
				pod.Spec.Priority = old.Spec.Priority
			}
			if pod.Spec.PreemptionPolicy == nil {
				pod.Spec.PreemptionPolicy = old.Spec.PreemptionPolicy
			}
		}
		return nil
	}

	var (
		priority int32
		policy   *corev1.PreemptionPolicy
	)
	if pod.Spec.PriorityClassName == "" {
		def, err := p.globalDefault(ctx)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to get default priority class: %w", err))
		}
		if def != nil {
			pod.Spec.PriorityClassName = def.Name
			priority, policy = def.Value, def.PreemptionPolicy
		} else {
			policy = ptrTo(corev1.PreemptLowerPriority)
		}
	} else {
		pc, err := p.class(ctx, pod.Spec.PriorityClassName)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to get PriorityClass with name %s: %w", pod.Spec.PriorityClassName, err))
		}
		if pc == nil {
			return NewForbidden(a, fmt.Errorf("no PriorityClass with name %v was found", pod.Spec.PriorityClassName))
		}
		priority, policy = pc.Value, pc.PreemptionPolicy
		if policy == nil {
			policy = ptrTo(corev1.PreemptLowerPriority)
		}
	}

	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return NewForbidden(a, fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, priority))
	}
	pod.Spec.Priority = ptrTo(priority)
	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return NewForbidden(a, fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policy))
		}
		pod.Spec.PreemptionPolicy = ptrTo(*policy)
	}
	return nil
}

// Validate keeps PriorityClasses to one global default.
func (p *Priority) Validate(ctx context.Context, a *Attributes) error {
	if a.Subresource != "" || a.Resource.GroupResource() != priorityClassesGR {
		return nil
	}
	pc, ok := a.Object.(*schedulingv1.PriorityClass)
	if !ok {
		return apierrors.NewBadRequest("resource was marked with kind PriorityClass but was unable to be converted")
	}
	if !pc.GlobalDefault {
		return nil
	}
	def, err := p.globalDefault(ctx)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("failed to get default priority class: %w", err))
	}
	if def != nil && (a.Operation == Create || def.Name != pc.Name) {
		return NewForbidden(a, fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", def.Name))
	}
	return nil
}

// class returns the named class, nil when it does not exist.
func (p *Priority) class(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
	pc, found, err := getTyped[*schedulingv1.PriorityClass](ctx, p.classes, storage.Key(priorityClassesGR, "", name))
	if err != nil || found {
		return pc, err
	}
	if v, ok := systemPriorityClasses[name]; ok {
		return &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v,
			PreemptionPolicy: ptrTo(corev1.PreemptLowerPriority),
		}, nil
	}
	return nil, nil
}

// globalDefault returns the global default class, the lowest-valued one if
// a race left several; nil when there is none.
func (p *Priority) globalDefault(ctx context.Context) (*schedulingv1.PriorityClass, error) {
	classes, err := listTyped[*schedulingv1.PriorityClass](ctx, p.classes, storage.Prefix(priorityClassesGR))
	if err != nil {
		return nil, err
	}
	var def *schedulingv1.PriorityClass
	for _, pc := range classes {
		if pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
			def = pc
		}
	}
	return def, nil
}

func ptrTo[T any](v T) *T { return &v }
