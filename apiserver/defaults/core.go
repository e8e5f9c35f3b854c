package defaults

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Service defaults a Service: type ClusterIP, sessionAffinity None (with
// the 3h ClientIP timeout when ClientIP), ports TCP with targetPort = port,
// externalTrafficPolicy Cluster when reachable from outside,
// internalTrafficPolicy Cluster, allocateLoadBalancerNodePorts for load
// balancers, and ipFamilyPolicy (SingleStack; RequireDualStack for headless
// services without selector). The IP families and cluster IPs themselves
// depend on the cluster's service CIDRs and are the allocator's business.
//
// Kubernetes infers ipFamilyPolicy in its allocator, where an update that
// omits it keeps the stored value: callers defaulting an update must carry
// the old policy over before calling Service (the Defaulter plugin does).
func Service(s *corev1.Service) {
	spec := &s.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		c := spec.SessionAffinityConfig
		if c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptrTo(corev1.DefaultClientIPServiceAffinitySeconds)},
			}
		}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if externallyAccessible(s) && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.InternalTrafficPolicy == nil {
		switch spec.Type {
		case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
			spec.InternalTrafficPolicy = ptrTo(corev1.ServiceInternalTrafficPolicyCluster)
		}
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		if spec.AllocateLoadBalancerNodePorts == nil {
			spec.AllocateLoadBalancerNodePorts = ptrTo(true)
		}
		for i := range s.Status.LoadBalancer.Ingress {
			ing := &s.Status.LoadBalancer.Ingress[i]
			if ing.IP != "" && ing.IPMode == nil {
				ing.IPMode = ptrTo(corev1.LoadBalancerIPModeVIP)
			}
		}
	}
	if spec.IPFamilyPolicy == nil && spec.Type != corev1.ServiceTypeExternalName {
		if spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0 {
			spec.IPFamilyPolicy = ptrTo(corev1.IPFamilyPolicyRequireDualStack)
		} else {
			spec.IPFamilyPolicy = ptrTo(corev1.IPFamilyPolicySingleStack)
		}
	}
}

// externallyAccessible: node ports, load balancers, or external IPs.
func externallyAccessible(s *corev1.Service) bool {
	switch s.Spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeClusterIP:
		return len(s.Spec.ExternalIPs) > 0
	}
	return false
}

// Namespace labels a named namespace with kubernetes.io/metadata.name and
// starts its status in phase Active.
func Namespace(ns *corev1.Namespace) {
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

// NamespaceOnCreate adds the "kubernetes" finalizer a new namespace always
// carries (after any the client asked for); the namespace controller removes
// it once the namespace's content is gone.
func NamespaceOnCreate(ns *corev1.Namespace) {
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return
		}
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
}

// Node copies capacity into allocatable when the node reports no
// allocatable.
func Node(n *corev1.Node) {
	if n.Status.Allocatable == nil && n.Status.Capacity != nil {
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	}
	roundUpResources(n.Status.Capacity)
	roundUpResources(n.Status.Allocatable)
}

// Secret defaults the type to Opaque.
func Secret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

// ConfigMap gives a ConfigMap an empty (non-nil) data map, which
// serializes as no field at all but lets callers index it.
func ConfigMap(c *corev1.ConfigMap) {
	if c.Data == nil {
		c.Data = map[string]string{}
	}
}

// Endpoints defaults every port's protocol to TCP.
func Endpoints(e *corev1.Endpoints) {
	for i := range e.Subsets {
		for j := range e.Subsets[i].Ports {
			if e.Subsets[i].Ports[j].Protocol == "" {
				e.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}

// LimitRange completes Container items: a missing default limit is the max,
// a missing default request is the default limit, else the min. All
// quantities are rounded up to milli precision.
func LimitRange(lr *corev1.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type == corev1.LimitTypeContainer {
			if item.Default == nil {
				item.Default = corev1.ResourceList{}
			}
			if item.DefaultRequest == nil {
				item.DefaultRequest = corev1.ResourceList{}
			}
			fillMissing(item.Default, item.Max)
			fillMissing(item.DefaultRequest, item.Default)
			fillMissing(item.DefaultRequest, item.Min)
		}
		for _, rl := range []corev1.ResourceList{item.Max, item.Min, item.Default, item.DefaultRequest, item.MaxLimitRequestRatio} {
			roundUpResources(rl)
		}
	}
}

// fillMissing copies into dst every resource of src that dst lacks.
func fillMissing(dst, src corev1.ResourceList) {
	for name, q := range src {
		if _, ok := dst[name]; !ok {
			dst[name] = q.DeepCopy()
		}
	}
}

// ResourceQuota rounds the quota's quantities up to milli precision.
func ResourceQuota(q *corev1.ResourceQuota) {
	roundUpResources(q.Spec.Hard)
	roundUpResources(q.Status.Hard)
	roundUpResources(q.Status.Used)
}

// PersistentVolume defaults phase Pending, reclaim policy Retain and
// volumeMode Filesystem.
func PersistentVolume(pv *corev1.PersistentVolume) {
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
	}
	roundUpResources(pv.Spec.Capacity)
	src := &pv.Spec.PersistentVolumeSource
	if src.HostPath != nil {
		hostPath(src.HostPath)
	}
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = "default"
	}
	if r := src.RBD; r != nil {
		rbd(&r.RBDPool, &r.RadosUser, &r.Keyring)
	}
	if src.AzureDisk != nil {
		azureDisk(src.AzureDisk)
	}
	if s := src.ScaleIO; s != nil {
		if s.StorageMode == "" {
			s.StorageMode = "ThinProvisioned"
		}
		if s.FSType == "" {
			s.FSType = "xfs"
		}
	}
}

// PersistentVolumeClaim defaults phase Pending and volumeMode Filesystem.
func PersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
	pvcSpec(&pvc.Spec)
	roundUpResources(pvc.Status.Capacity)
	roundUpResources(pvc.Status.AllocatedResources)
}

// ReplicationController takes its selector and labels from the pod
// template when it has none, and defaults replicas to 1.
func ReplicationController(rc *corev1.ReplicationController) {
	if t := rc.Spec.Template; t != nil && t.Labels != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = maps.Clone(t.Labels)
		}
		if len(rc.Labels) == 0 {
			rc.Labels = maps.Clone(t.Labels)
		}
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptrTo(int32(1))
	}
	if rc.Spec.Template != nil {
		PodTemplateSpec(rc.Spec.Template)
	}
}
