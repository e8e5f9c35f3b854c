package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/podkit/podkit/apiserver/defaults"
	"github.com/podkit/podkit/apiserver/storage"
)

// LimitRangerName names the LimitRanger plugin.
const LimitRangerName = "LimitRanger"

// LimitRangerAnnotation records on a pod which defaults LimitRanger set.
const LimitRangerAnnotation = "kubernetes.io/limit-ranger"

// LimitRanger is Kubernetes' LimitRanger plugin, for the LimitRanges of the
// request's namespace:
//
//   - Admit (pod creation) gives every container and init container that
//     lacks them the default limits and requests of Container items, and
//     records what it set in the kubernetes.io/limit-ranger annotation;
//   - Validate (pod creation, pods/resize, claim creation and update)
//     enforces min, max and maxLimitRequestRatio per container (Container
//     items), over the pod's total (Pod items) and on claims' storage
//     requests (PersistentVolumeClaim items), rejecting with 403 and
//     Kubernetes' messages, e.g. `maximum cpu usage per Container is 1, but
//     limit is 2`.
type LimitRanger struct {
	ranges ObjectLister
}

var (
	_ Admitter  = (*LimitRanger)(nil)
	_ Validator = (*LimitRanger)(nil)
	_ Handler   = (*LimitRanger)(nil)
	_ Namer     = (*LimitRanger)(nil)
)

// LimitRangerConfig configures NewLimitRanger.
type LimitRangerConfig struct {
	// LimitRanges lists limit ranges from storage. Required.
	LimitRanges ObjectLister
}

// NewLimitRanger returns the LimitRanger plugin.
func NewLimitRanger(cfg LimitRangerConfig) (*LimitRanger, error) {
	if cfg.LimitRanges == nil {
		return nil, errors.New("admission: LimitRanger needs a limit range store")
	}
	return &LimitRanger{ranges: cfg.LimitRanges}, nil
}

// Name implements Namer.
func (*LimitRanger) Name() string { return LimitRangerName }

// Handles implements Handler: create and update.
func (*LimitRanger) Handles(op Operation) bool { return op == Create || op == Update }

// Admit applies default resources to a new pod.
func (l *LimitRanger) Admit(ctx context.Context, a *Attributes) error {
	return l.run(ctx, a, func(lr *corev1.LimitRange, pod *corev1.Pod, _ *corev1.PersistentVolumeClaim) error {
		if pod != nil {
			applyDefaults(pod, lr)
		}
		return nil
	})
}

// Validate enforces the namespace's limit ranges.
func (l *LimitRanger) Validate(ctx context.Context, a *Attributes) error {
	return l.run(ctx, a, func(lr *corev1.LimitRange, pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim) error {
		if pod != nil {
			return validatePodLimits(lr, pod)
		}
		return validateClaimLimits(lr, pvc)
	})
}

func (l *LimitRanger) run(ctx context.Context, a *Attributes,
	fn func(lr *corev1.LimitRange, pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim) error,
) error {
	pod, pvc, err := limitedObject(a)
	if err != nil || (pod == nil && pvc == nil) {
		return err
	}
	if a.OldObject != nil {
		if m, err := meta.Accessor(a.OldObject); err == nil && m.GetDeletionTimestamp() != nil {
			return nil // objects being deleted are not held to new limits
		}
	}
	ranges, err := listTyped[*corev1.LimitRange](ctx, l.ranges, storage.Key(limitRangesGR, a.Namespace, ""))
	if err != nil {
		return NewForbidden(a, fmt.Errorf("unable to %s %v at this time because there was an error enforcing limit ranges", a.Operation, a.Resource))
	}
	for _, lr := range ranges {
		// Stored limit ranges are defaulted already; defaulting a copy
		// again is harmless and keeps the plugin right if one is not.
		lr = lr.DeepCopy()
		defaults.LimitRange(lr)
		if err := fn(lr, pod, pvc); err != nil {
			return NewForbidden(a, err)
		}
	}
	return nil
}

// limitedObject returns the pod or claim a request is about, or neither
// when LimitRanger ignores the request. Pods are limited on creation and
// on pods/resize updates; their containers cannot change otherwise.
func limitedObject(a *Attributes) (*corev1.Pod, *corev1.PersistentVolumeClaim, error) {
	switch a.Resource.GroupResource() {
	case podsGR:
		if a.Subresource == "" && a.Operation == Create || a.Subresource == "resize" && a.Operation == Update {
			pod, ok := a.Object.(*corev1.Pod)
			if !ok {
				return nil, nil, apierrors.NewBadRequest("resource was marked with kind Pod but was unable to be converted")
			}
			return pod, nil, nil
		}
	case persistentVolumeClaimsGR:
		if a.Subresource == "" {
			pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
			if !ok {
				return nil, nil, apierrors.NewBadRequest("resource was marked with kind PersistentVolumeClaim but was unable to be converted")
			}
			return nil, pvc, nil
		}
	}
	return nil, nil, nil
}

// applyDefaults fills each container's missing limits and requests from the
// range's Container items and annotates the pod with what it set.
func applyDefaults(pod *corev1.Pod, lr *corev1.LimitRange) {
	defRequests, defLimits := corev1.ResourceList{}, corev1.ResourceList{}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for name, q := range item.DefaultRequest {
			defRequests[name] = q.DeepCopy()
		}
		for name, q := range item.Default {
			defLimits[name] = q.DeepCopy()
		}
	}
	var notes []string
	for i := range pod.Spec.Containers {
		notes = defaultContainer(&pod.Spec.Containers[i], "container", defRequests, defLimits, notes)
	}
	for i := range pod.Spec.InitContainers {
		notes = defaultContainer(&pod.Spec.InitContainers[i], "init container", defRequests, defLimits, notes)
	}
	if len(notes) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[LimitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
}

func defaultContainer(c *corev1.Container, kind string, defRequests, defLimits corev1.ResourceList, notes []string) []string {
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	setRequests := fillFrom(c.Resources.Requests, defRequests)
	setLimits := fillFrom(c.Resources.Limits, defLimits)
	if len(setRequests) > 0 {
		notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(setRequests, ", "), kind, c.Name))
	}
	if len(setLimits) > 0 {
		notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(setLimits, ", "), kind, c.Name))
	}
	return notes
}

// fillFrom copies the resources dst lacks from src and returns their sorted
// names.
func fillFrom(dst, src corev1.ResourceList) []string {
	var set []string
	for name, q := range src {
		if _, ok := dst[name]; !ok {
			dst[name] = q.DeepCopy()
			set = append(set, string(name))
		}
	}
	slices.Sort(set)
	return set
}

// validatePodLimits checks a pod against the range's Container and Pod
// items; all violations are reported together.
func validatePodLimits(lr *corev1.LimitRange, pod *corev1.Pod) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		switch item.Type {
		case corev1.LimitTypeContainer:
			for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
				for i := range cs {
					errs = append(errs, checkItem(item, cs[i].Resources.Requests, cs[i].Resources.Limits)...)
				}
			}
		case corev1.LimitTypePod:
			requests, limits := podTotals(pod, podResourceOptions{podLevel: isCPUOrMemory})
			errs = append(errs, checkItem(item, requests, limits)...)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// validateClaimLimits checks a claim's storage request against the range's
// PersistentVolumeClaim items; claim limits are not user input.
func validateClaimLimits(lr *corev1.LimitRange, pvc *corev1.PersistentVolumeClaim) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypePersistentVolumeClaim {
			continue
		}
		requests := pvc.Spec.Resources.Requests
		for _, name := range sortedNames(item.Min) {
			if err := minConstraint(item.Type, name, item.Min[name], requests, nil); err != nil {
				errs = append(errs, err)
			}
		}
		for _, name := range sortedNames(item.Max) {
			if err := maxRequestConstraint(item.Type, name, item.Max[name], requests); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return utilerrors.NewAggregate(errs)
}

func checkItem(item corev1.LimitRangeItem, requests, limits corev1.ResourceList) []error {
	var errs []error
	for _, name := range sortedNames(item.Min) {
		if err := minConstraint(item.Type, name, item.Min[name], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range sortedNames(item.Max) {
		if err := maxConstraint(item.Type, name, item.Max[name], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range sortedNames(item.MaxLimitRequestRatio) {
		if err := ratioConstraint(item.Type, name, item.MaxLimitRequestRatio[name], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// commonUnits returns request, limit and bound in a common unit: milli-units
// when all three fit, whole units otherwise.
func commonUnits(req, lim, bound resource.Quantity) (int64, int64, int64) {
	r, l, b := req.Value(), lim.Value(), bound.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && b <= resource.MaxMilliValue {
		return req.MilliValue(), lim.MilliValue(), bound.MilliValue()
	}
	return r, l, b
}

func minConstraint(typ corev1.LimitType, name corev1.ResourceName, bound resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, b := commonUnits(req, lim, bound)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, typ, bound.String())
	case r < b:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, typ, bound.String(), req.String())
	case hasLim && l < b:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, typ, bound.String(), lim.String())
	}
	return nil
}

func maxConstraint(typ corev1.LimitType, name corev1.ResourceName, bound resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, b := commonUnits(req, lim, bound)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, typ, bound.String())
	case l > b:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, typ, bound.String(), lim.String())
	case hasReq && r > b:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, typ, bound.String(), req.String())
	}
	return nil
}

// maxRequestConstraint bounds only the request (claims have no limits).
func maxRequestConstraint(typ corev1.LimitType, name corev1.ResourceName, bound resource.Quantity, requests corev1.ResourceList) error {
	req, hasReq := requests[name]
	r, _, b := commonUnits(req, resource.Quantity{}, bound)
	switch {
	case !hasReq:
		return fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", name, typ, bound.String())
	case r > b:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, typ, bound.String(), req.String())
	}
	return nil
}

func ratioConstraint(typ corev1.LimitType, name corev1.ResourceName, bound resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, _ := commonUnits(req, lim, bound)
	if !hasReq || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, typ, bound.String())
	}
	if !hasLim || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, typ, bound.String())
	}
	ratio := float64(l) / float64(r)
	observed, allowed := ratio, float64(bound.Value())
	if bound.Value() <= resource.MaxMilliValue {
		observed, allowed = ratio*1000, float64(bound.MilliValue())
	}
	if observed > allowed {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, typ, bound.String(), ratio)
	}
	return nil
}
