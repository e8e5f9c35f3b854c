package admission

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A quotaEvaluator measures what objects of one resource consume, in the
// resource names a ResourceQuota's spec.hard may list.
type quotaEvaluator interface {
	// handles reports whether the operation is charged to quota.
	handles(op Operation) bool
	// tracks reports whether the evaluator measures the quota resource.
	tracks(name corev1.ResourceName) bool
	// matchesScope reports whether obj falls into a quota scope.
	matchesScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) bool
	// usage measures one object.
	usage(obj runtime.Object, now time.Time) (corev1.ResourceList, error)
	// constraints checks that obj states every required resource.
	constraints(required []corev1.ResourceName, obj runtime.Object) error
}

// countName is the object-count quota resource of a group resource:
// count/pods, count/deployments.apps, ...
func countName(gr schema.GroupResource) corev1.ResourceName {
	return corev1.ResourceName("count/" + gr.String())
}

// legacyCountNames are the older names of object-count quotas.
var legacyCountNames = map[schema.GroupResource]corev1.ResourceName{
	{Resource: "configmaps"}:             corev1.ResourceConfigMaps,
	{Resource: "secrets"}:                corev1.ResourceSecrets,
	{Resource: "replicationcontrollers"}: corev1.ResourceReplicationControllers,
	resourceQuotasGR:                     corev1.ResourceQuotas,
}

// evaluatorFor returns the evaluator of a group resource; resources without
// a dedicated one are counted.
func evaluatorFor(gr schema.GroupResource) quotaEvaluator {
	switch gr {
	case podsGR:
		return podQuota{}
	case servicesGR:
		return serviceQuota{}
	case persistentVolumeClaimsGR:
		return claimQuota{}
	}
	return objectCount{gr: gr, legacy: legacyCountNames[gr]}
}

// trackingResource returns the group resource whose objects a quota
// resource name measures.
func trackingResource(name corev1.ResourceName) (schema.GroupResource, bool) {
	if rest, ok := strings.CutPrefix(string(name), "count/"); ok {
		resource, group, _ := strings.Cut(rest, ".")
		return schema.GroupResource{Group: group, Resource: resource}, resource != ""
	}
	for _, gr := range []schema.GroupResource{podsGR, servicesGR, persistentVolumeClaimsGR} {
		if evaluatorFor(gr).tracks(name) {
			return gr, true
		}
	}
	for gr, legacy := range legacyCountNames {
		if legacy == name {
			return gr, true
		}
	}
	return schema.GroupResource{}, false
}

// objectCount counts objects on creation.
type objectCount struct {
	gr     schema.GroupResource
	legacy corev1.ResourceName
}

func (objectCount) handles(op Operation) bool { return op == Create }

func (e objectCount) tracks(name corev1.ResourceName) bool {
	return name == countName(e.gr) || (e.legacy != "" && name == e.legacy)
}

func (objectCount) matchesScope(corev1.ScopedResourceSelectorRequirement, runtime.Object) bool {
	return false
}

func (e objectCount) usage(runtime.Object, time.Time) (corev1.ResourceList, error) {
	out := corev1.ResourceList{countName(e.gr): *resource.NewQuantity(1, resource.DecimalSI)}
	if e.legacy != "" {
		out[e.legacy] = *resource.NewQuantity(1, resource.DecimalSI)
	}
	return out, nil
}

func (objectCount) constraints([]corev1.ResourceName, runtime.Object) error { return nil }

// serviceQuota counts services, their node ports and load balancers.
type serviceQuota struct{}

func (serviceQuota) handles(op Operation) bool { return op == Create || op == Update }

func (serviceQuota) tracks(name corev1.ResourceName) bool {
	switch name {
	case countName(servicesGR), corev1.ResourceServices, corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers:
		return true
	}
	return false
}

func (serviceQuota) matchesScope(corev1.ScopedResourceSelectorRequirement, runtime.Object) bool {
	return false
}

func (serviceQuota) usage(obj runtime.Object, _ time.Time) (corev1.ResourceList, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, fmt.Errorf("quota: expected *v1.Service, got %T", obj)
	}
	one := *resource.NewQuantity(1, resource.DecimalSI)
	nodePorts, lbs := int64(0), int64(0)
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		nodePorts = int64(len(svc.Spec.Ports))
	case corev1.ServiceTypeLoadBalancer:
		lbs = 1
		if svc.Spec.AllocateLoadBalancerNodePorts != nil && !*svc.Spec.AllocateLoadBalancerNodePorts {
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					nodePorts++
				}
			}
		} else {
			nodePorts = int64(len(svc.Spec.Ports))
		}
	}
	return corev1.ResourceList{
		countName(servicesGR):                one.DeepCopy(),
		corev1.ResourceServices:              one.DeepCopy(),
		corev1.ResourceServicesNodePorts:     *resource.NewQuantity(nodePorts, resource.DecimalSI),
		corev1.ResourceServicesLoadBalancers: *resource.NewQuantity(lbs, resource.DecimalSI),
	}, nil
}

func (serviceQuota) constraints([]corev1.ResourceName, runtime.Object) error { return nil }

// claimQuota counts persistent volume claims and the storage they request,
// overall and per storage class.
type claimQuota struct{}

const storageClassSuffix = ".storageclass.storage.k8s.io/"

func (claimQuota) handles(op Operation) bool { return op == Create || op == Update }

func (claimQuota) tracks(name corev1.ResourceName) bool {
	switch name {
	case countName(persistentVolumeClaimsGR), corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage:
		return true
	}
	_, res, ok := strings.Cut(string(name), storageClassSuffix)
	return ok && (res == string(corev1.ResourcePersistentVolumeClaims) || res == string(corev1.ResourceRequestsStorage))
}

func (claimQuota) matchesScope(corev1.ScopedResourceSelectorRequirement, runtime.Object) bool {
	return false
}

func (claimQuota) usage(obj runtime.Object, _ time.Time) (corev1.ResourceList, error) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil, fmt.Errorf("quota: expected *v1.PersistentVolumeClaim, got %T", obj)
	}
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out := corev1.ResourceList{
		countName(persistentVolumeClaimsGR):   one.DeepCopy(),
		corev1.ResourcePersistentVolumeClaims: one.DeepCopy(),
	}
	storage, hasStorage := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if alloc, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && (!hasStorage || alloc.Cmp(storage) > 0) {
		storage, hasStorage = alloc, true
	}
	if hasStorage {
		out[corev1.ResourceRequestsStorage] = storage.DeepCopy()
	}
	if class := pvc.Spec.StorageClassName; class != nil && *class != "" {
		out[corev1.ResourceName(*class+storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = one.DeepCopy()
		if hasStorage {
			out[corev1.ResourceName(*class+storageClassSuffix+string(corev1.ResourceRequestsStorage))] = storage.DeepCopy()
		}
	}
	return out, nil
}

func (claimQuota) constraints([]corev1.ResourceName, runtime.Object) error { return nil }

// podQuota measures pods: their count, and the compute resources of pods
// that have not finished.
type podQuota struct{}

// podComputeNames are the fixed compute resource names a pod quota tracks.
var podComputeNames = []corev1.ResourceName{
	corev1.ResourcePods, corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
}

// mustStateNames are the resources every container must state when a
// quota tracks them (a Kubernetes compatibility rule for cpu and memory).
var mustStateNames = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
}

func (podQuota) handles(op Operation) bool { return op == Create }

func (podQuota) tracks(name corev1.ResourceName) bool {
	if name == countName(podsGR) || slices.Contains(podComputeNames, name) {
		return true
	}
	if isHugePages(name) {
		return true
	}
	rest, ok := strings.CutPrefix(string(name), corev1.DefaultResourceRequestsPrefix)
	return ok && (isHugePages(corev1.ResourceName(rest)) || isExtendedResource(corev1.ResourceName(rest)))
}

// isExtendedResource: a qualified, domain-prefixed name outside the
// kubernetes.io domain, such as nvidia.com/gpu.
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) ||
		strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(content.IsLabelKey(corev1.DefaultResourceRequestsPrefix+s)) == 0
}

func (podQuota) matchesScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) bool {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false
	}
	switch sel.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return podTerminating(pod)
	case corev1.ResourceQuotaScopeNotTerminating:
		return !podTerminating(pod)
	case corev1.ResourceQuotaScopeBestEffort:
		return podBestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !podBestEffort(pod)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return podCrossNamespaceAffinity(pod)
	case corev1.ResourceQuotaScopePriorityClass:
		class := pod.Spec.PriorityClassName
		switch sel.Operator {
		case corev1.ScopeSelectorOpExists:
			return class != ""
		case corev1.ScopeSelectorOpIn:
			return slices.Contains(sel.Values, class)
		case corev1.ScopeSelectorOpNotIn:
			return !slices.Contains(sel.Values, class)
		}
		// DoesNotExist: Kubernetes matches the scope as a label selector
		// over a set that always has the key, so it never matches.
	}
	return false
}

func (podQuota) usage(obj runtime.Object, now time.Time) (corev1.ResourceList, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("quota: expected *v1.Pod, got %T", obj)
	}
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out := corev1.ResourceList{countName(podsGR): one.DeepCopy()}
	if !podConsumesCompute(pod, now) {
		return out, nil
	}
	requests, limits := podTotals(pod, podResourceOptions{overhead: true, podLevel: func(n corev1.ResourceName) bool {
		return isCPUOrMemory(n) || isHugePages(n)
	}})
	out[corev1.ResourcePods] = one.DeepCopy()
	for k, v := range computeUsage(requests, limits) {
		out[k] = v
	}
	return out, nil
}

// computeUsage maps requests and limits to quota resource names.
func computeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	pairs := []struct{ plain, req, lim corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	}
	for _, p := range pairs {
		if q, ok := requests[p.plain]; ok {
			out[p.plain] = q.DeepCopy()
			out[p.req] = q.DeepCopy()
		}
		if q, ok := limits[p.plain]; ok {
			out[p.lim] = q.DeepCopy()
		}
	}
	for name, q := range requests {
		switch {
		case isHugePages(name):
			out[name] = q.DeepCopy()
			out[corev1.DefaultResourceRequestsPrefix+name] = q.DeepCopy()
		case isExtendedResource(name):
			out[corev1.DefaultResourceRequestsPrefix+name] = q.DeepCopy()
		}
	}
	return out
}

// podConsumesCompute: pods that finished, or whose deletion grace period
// has run out, keep counting as objects but no longer as compute.
func podConsumesCompute(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		grace := time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		if now.After(pod.DeletionTimestamp.Add(grace)) {
			return false
		}
	}
	return true
}

func podTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// podBestEffort: no cpu or memory request or limit anywhere in the pod.
func podBestEffort(pod *corev1.Pod) bool {
	positive := func(rl corev1.ResourceList) bool {
		for name, q := range rl {
			if isCPUOrMemory(name) && q.Sign() > 0 {
				return true
			}
		}
		return false
	}
	if r := pod.Spec.Resources; r != nil && (positive(r.Requests) || positive(r.Limits)) {
		return false
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if positive(c.Resources.Requests) || positive(c.Resources.Limits) {
				return false
			}
		}
	}
	return true
}

func podCrossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t corev1.PodAffinityTerm) bool { return len(t.Namespaces) > 0 || t.NamespaceSelector != nil }
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	return slices.ContainsFunc(terms, cross)
}

// constraints: when a quota tracks cpu or memory, every container must
// state the matching request or limit (pod-level resources state it for
// all), e.g. `must specify limits.cpu for: app,sidecar`.
func (podQuota) constraints(required []corev1.ResourceName, obj runtime.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("quota: expected *v1.Pod, got %T", obj)
	}
	var podLevel corev1.ResourceList
	if r := pod.Spec.Resources; r != nil {
		podLevel = computeUsage(r.Requests, r.Limits)
	}
	missing := map[corev1.ResourceName][]string{}
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			stated := computeUsage(c.Resources.Requests, c.Resources.Limits)
			for _, name := range required {
				if !slices.Contains(mustStateNames, name) {
					continue
				}
				_, byContainer := stated[name]
				_, byPod := podLevel[name]
				if !byContainer && !byPod && !slices.Contains(missing[name], c.Name) {
					missing[name] = append(missing[name], c.Name)
				}
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]corev1.ResourceName, 0, len(missing))
	for name := range missing {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		containers := missing[name]
		slices.Sort(containers)
		parts[i] = fmt.Sprintf("%s for: %s", name, strings.Join(containers, ","))
	}
	return fmt.Errorf("must specify %s", strings.Join(parts, "; "))
}
