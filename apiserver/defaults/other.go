package defaults

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
)

// EndpointSlice defaults every port's name to "" and protocol to TCP.
func EndpointSlice(es *discoveryv1.EndpointSlice) {
	for i := range es.Ports {
		p := &es.Ports[i]
		if p.Name == nil {
			p.Name = ptrTo("")
		}
		if p.Protocol == nil {
			p.Protocol = ptrTo(corev1.ProtocolTCP)
		}
	}
}

// PriorityClass defaults preemptionPolicy to PreemptLowerPriority.
func PriorityClass(pc *schedulingv1.PriorityClass) {
	if pc.PreemptionPolicy == nil {
		pc.PreemptionPolicy = ptrTo(corev1.PreemptLowerPriority)
	}
}

// NetworkPolicy defaults port protocols to TCP and policyTypes to Ingress,
// plus Egress when the policy has egress rules.
func NetworkPolicy(np *networkingv1.NetworkPolicy) {
	for i := range np.Spec.Ingress {
		networkPolicyPorts(np.Spec.Ingress[i].Ports)
	}
	for i := range np.Spec.Egress {
		networkPolicyPorts(np.Spec.Egress[i].Ports)
	}
	if len(np.Spec.PolicyTypes) == 0 {
		np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(np.Spec.Egress) != 0 {
			np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
}

func networkPolicyPorts(ports []networkingv1.NetworkPolicyPort) {
	for i := range ports {
		if ports[i].Protocol == nil {
			ports[i].Protocol = ptrTo(corev1.ProtocolTCP)
		}
	}
}

// RoleBinding defaults the roleRef's and the subjects' apiGroup.
func RoleBinding(rb *rbacv1.RoleBinding) {
	roleRef(&rb.RoleRef)
	Subjects(rb.Subjects)
}

// ClusterRoleBinding defaults the roleRef's and the subjects' apiGroup.
func ClusterRoleBinding(crb *rbacv1.ClusterRoleBinding) {
	roleRef(&crb.RoleRef)
	Subjects(crb.Subjects)
}

func roleRef(r *rbacv1.RoleRef) {
	if r.APIGroup == "" {
		r.APIGroup = rbacv1.GroupName
	}
}

// Subjects defaults the apiGroup of RBAC binding subjects: users and groups
// belong to rbac.authorization.k8s.io, service accounts to the core group.
func Subjects(subjects []rbacv1.Subject) {
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup != "" {
			continue
		}
		switch s.Kind {
		case rbacv1.UserKind, rbacv1.GroupKind:
			s.APIGroup = rbacv1.GroupName
		}
	}
}
