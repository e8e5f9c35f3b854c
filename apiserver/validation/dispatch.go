package validation

import (
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateCreate validates obj, a new object whose name has been generated and
// whose defaults have been applied. Types without specific rules get
// ObjectMeta validation only.
func (v *Validator) ValidateCreate(obj runtime.Object) field.ErrorList {
	return dedupe(v.validateCreate(obj))
}

func (v *Validator) validateCreate(obj runtime.Object) field.ErrorList {
	if isNil(obj) {
		return field.ErrorList{field.InternalError(field.NewPath(""), fmt.Errorf("nil %T object", obj))}
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return v.validatePodCreate(o)
	case *corev1.Binding:
		return validateBinding(o)
	case *corev1.PodTemplate:
		return v.validatePodTemplate(o)
	case *corev1.ReplicationController:
		return v.validateReplicationController(o)
	case *corev1.Node:
		return v.validateNode(o)
	case *corev1.Namespace:
		return validateNamespace(o)
	case *corev1.Service:
		return v.validateService(o)
	case *corev1.Endpoints:
		return v.validateEndpoints(o, nil)
	case *discoveryv1.EndpointSlice:
		return validateEndpointSlice(o)
	case *corev1.ConfigMap:
		return validateConfigMap(o)
	case *corev1.Secret:
		return validateSecret(o)
	case *corev1.ServiceAccount:
		return validateServiceAccount(o)
	case *corev1.Event:
		return v.validateEvent(o)
	case *eventsv1.Event:
		return v.validateEventsV1Event(o)
	case *corev1.LimitRange:
		return validateLimitRange(o)
	case *corev1.ResourceQuota:
		return validateResourceQuota(o)
	case *appsv1.Deployment:
		return v.validateDeployment(o)
	case *appsv1.ReplicaSet:
		return v.validateReplicaSet(o)
	case *appsv1.StatefulSet:
		return v.validateStatefulSet(o)
	case *appsv1.DaemonSet:
		return v.validateDaemonSet(o)
	case *batchv1.Job:
		return v.validateJob(o)
	case *coordinationv1.Lease:
		return validateLease(o)
	case *rbacv1.Role:
		return validateRole(o)
	case *rbacv1.ClusterRole:
		return validateClusterRole(o)
	case *rbacv1.RoleBinding:
		return validateRoleBinding(o)
	case *rbacv1.ClusterRoleBinding:
		return validateClusterRoleBinding(o)
	case *autoscalingv1.Scale:
		return validateScale(o)
	default:
		return v.validateGenericCreate(obj)
	}
}

// ValidateUpdate validates the update of old (the stored object) to obj
// through the main resource: ObjectMeta immutability plus each type's rules
// on which spec fields may change.
func (v *Validator) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return dedupe(v.validateUpdate(obj, old))
}

func (v *Validator) validateUpdate(obj, old runtime.Object) field.ErrorList {
	if errs := checkPair(obj, old); errs != nil {
		return errs
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return v.validatePodUpdate(o, old.(*corev1.Pod))
	case *corev1.PodTemplate:
		return v.validatePodTemplateUpdate(o, old.(*corev1.PodTemplate))
	case *corev1.ReplicationController:
		return v.validateReplicationControllerUpdate(o, old.(*corev1.ReplicationController))
	case *corev1.Node:
		return v.validateNodeUpdate(o, old.(*corev1.Node))
	case *corev1.Namespace:
		return validateNamespaceUpdate(o, old.(*corev1.Namespace))
	case *corev1.Service:
		return v.validateServiceUpdate(o, old.(*corev1.Service))
	case *corev1.Endpoints:
		return v.validateEndpointsUpdate(o, old.(*corev1.Endpoints))
	case *discoveryv1.EndpointSlice:
		return validateEndpointSliceUpdate(o, old.(*discoveryv1.EndpointSlice))
	case *corev1.ConfigMap:
		return validateConfigMapUpdate(o, old.(*corev1.ConfigMap))
	case *corev1.Secret:
		return validateSecretUpdate(o, old.(*corev1.Secret))
	case *corev1.ServiceAccount:
		return validateServiceAccountUpdate(o, old.(*corev1.ServiceAccount))
	case *corev1.Event:
		return v.validateEventUpdate(o, old.(*corev1.Event))
	case *eventsv1.Event:
		return v.validateEventsV1EventUpdate(o, old.(*eventsv1.Event))
	case *corev1.LimitRange:
		return validateLimitRangeUpdate(o, old.(*corev1.LimitRange))
	case *corev1.ResourceQuota:
		return validateResourceQuotaUpdate(o, old.(*corev1.ResourceQuota))
	case *appsv1.Deployment:
		return v.validateDeploymentUpdate(o, old.(*appsv1.Deployment))
	case *appsv1.ReplicaSet:
		return v.validateReplicaSetUpdate(o, old.(*appsv1.ReplicaSet))
	case *appsv1.StatefulSet:
		return v.validateStatefulSetUpdate(o, old.(*appsv1.StatefulSet))
	case *appsv1.DaemonSet:
		return v.validateDaemonSetUpdate(o, old.(*appsv1.DaemonSet))
	case *batchv1.Job:
		return v.validateJobUpdate(o, old.(*batchv1.Job))
	case *coordinationv1.Lease:
		return validateLeaseUpdate(o, old.(*coordinationv1.Lease))
	case *rbacv1.Role:
		return validateRoleUpdate(o, old.(*rbacv1.Role))
	case *rbacv1.ClusterRole:
		return validateClusterRoleUpdate(o, old.(*rbacv1.ClusterRole))
	case *rbacv1.RoleBinding:
		return validateRoleBindingUpdate(o, old.(*rbacv1.RoleBinding))
	case *rbacv1.ClusterRoleBinding:
		return validateClusterRoleBindingUpdate(o, old.(*rbacv1.ClusterRoleBinding))
	case *autoscalingv1.Scale:
		return validateScaleUpdate(o, old.(*autoscalingv1.Scale))
	default:
		return validateGenericUpdate(obj, old)
	}
}

// ValidateStatusUpdate validates an update of old to obj through the status
// subresource. The caller is expected to have copied the spec from old, as
// Kubernetes' status strategies do; fields the status subresource may not
// change (such as a pod's nodeName) are still checked.
func (v *Validator) ValidateStatusUpdate(obj, old runtime.Object) field.ErrorList {
	return dedupe(v.validateStatusUpdate(obj, old))
}

func (v *Validator) validateStatusUpdate(obj, old runtime.Object) field.ErrorList {
	if errs := checkPair(obj, old); errs != nil {
		return errs
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return v.validatePodStatusUpdate(o, old.(*corev1.Pod))
	case *corev1.Node:
		return v.validateNodeUpdate(o, old.(*corev1.Node))
	case *corev1.Namespace:
		return validateNamespaceStatusUpdate(o, old.(*corev1.Namespace))
	case *corev1.Service:
		return v.validateServiceStatusUpdate(o, old.(*corev1.Service))
	case *corev1.ReplicationController:
		return validateReplicationControllerStatusUpdate(o, old.(*corev1.ReplicationController))
	case *corev1.ResourceQuota:
		return validateResourceQuotaStatusUpdate(o, old.(*corev1.ResourceQuota))
	case *appsv1.Deployment:
		return validateDeploymentStatusUpdate(o, old.(*appsv1.Deployment))
	case *appsv1.ReplicaSet:
		return validateReplicaSetStatusUpdate(o, old.(*appsv1.ReplicaSet))
	case *appsv1.StatefulSet:
		return validateStatefulSetStatusUpdate(o, old.(*appsv1.StatefulSet))
	case *appsv1.DaemonSet:
		return validateDaemonSetStatusUpdate(o, old.(*appsv1.DaemonSet))
	case *batchv1.Job:
		return validateJobStatusUpdate(o, old.(*batchv1.Job))
	default:
		return validateGenericUpdate(obj, old)
	}
}

// checkPair rejects nil objects and an old object of another type.
func checkPair(obj, old runtime.Object) field.ErrorList {
	if isNil(obj) || isNil(old) {
		return field.ErrorList{field.InternalError(field.NewPath(""), fmt.Errorf("nil object in update (new %T, old %T)", obj, old))}
	}
	if reflect.TypeOf(obj) != reflect.TypeOf(old) {
		return field.ErrorList{field.InternalError(field.NewPath(""), fmt.Errorf("old object is %T, new object is %T", old, obj))}
	}
	return nil
}

func isNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	rv := reflect.ValueOf(obj)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// validateGenericCreate validates the ObjectMeta of a type without specific
// rules: DNS-subdomain names (the rule Kubernetes applies to custom
// resources), the namespace required or forbidden when the scope is known.
func (v *Validator) validateGenericCreate(obj runtime.Object) field.ErrorList {
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	namespaced := m.GetNamespace() != ""
	if gk, ok := v.GroupKind(obj); ok {
		if ns, known := v.Namespaced(gk); known {
			namespaced = ns
		}
	}
	errs := apivalidation.ValidateObjectMetaAccessor(m, namespaced, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateKubeFinalizers(m.GetFinalizers(), field.NewPath("metadata", "finalizers"))...)
}

func validateGenericUpdate(obj, old runtime.Object) field.ErrorList {
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	om, err := meta.Accessor(old)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(m, om, field.NewPath("metadata"))
	return append(errs, validateKubeFinalizers(m.GetFinalizers(), field.NewPath("metadata", "finalizers"))...)
}

// dedupe drops repeated identical errors: like Kubernetes, an update checks
// ObjectMeta with both the update and the create rules, which would report
// e.g. a bad label twice.
func dedupe(errs field.ErrorList) field.ErrorList {
	if len(errs) < 2 {
		return errs
	}
	seen := make(map[string]bool, len(errs))
	out := errs[:0:0]
	for _, e := range errs {
		key := string(e.Type) + "\x00" + e.Field + "\x00" + e.Detail + "\x00" + fmt.Sprintf("%v", e.BadValue)
		if !seen[key] {
			seen[key] = true
			out = append(out, e)
		}
	}
	return out
}
