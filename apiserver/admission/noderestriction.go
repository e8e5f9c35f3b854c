package admission

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/storage"
)

// NodeRestriction is Kubernetes' NodeRestriction admission plugin, the
// partner of the Node authorizer: the authorizer lets kubelets (users
// system:node:<name> in system:nodes) write nodes, pods and leases at all;
// this plugin confines those writes to the kubelet's own objects. A
// kubelet may create and update only its own Node, and may not set or
// change labels in the node-restriction.kubernetes.io/ namespace, nor
// kubernetes.io / k8s.io labels outside the kubelet's own set
// (kubernetes.io/hostname, topology, instance type, os/arch, and the
// kubelet.kubernetes.io/ and node.kubernetes.io/ namespaces), nor its
// taints; it may create only mirror pods bound to itself that reference
// no service account, secret, config map or claim; it may update the
// status of, and delete, only pods bound to it; it may touch only its own
// Lease in kube-node-lease; and it may request service account tokens
// only bound to pods running on it. Requests of other users pass.
type NodeRestriction struct {
	pods ObjectGetter
}

var (
	_ Validator = (*NodeRestriction)(nil)
	_ Namer     = (*NodeRestriction)(nil)
)

// NodeRestrictionConfig configures NodeRestriction.
type NodeRestrictionConfig struct {
	// Pods reads the pod a token request is bound to. Required.
	Pods ObjectGetter
}

// NewNodeRestriction builds the plugin.
func NewNodeRestriction(cfg NodeRestrictionConfig) (*NodeRestriction, error) {
	if cfg.Pods == nil {
		return nil, errors.New("admission: NodeRestriction needs a store")
	}
	return &NodeRestriction{pods: cfg.Pods}, nil
}

// Name is the plugin's name.
func (p *NodeRestriction) Name() string { return "NodeRestriction" }

const (
	nodeUserPrefix   = "system:node:"
	nodesGroup       = "system:nodes"
	mirrorAnnotation = corev1.MirrorPodAnnotationKey
)

// nodeName returns the node a user is.
func nodeName(u auth.User) (string, bool) {
	if u == nil || !strings.HasPrefix(u.GetName(), nodeUserPrefix) {
		return "", false
	}
	for _, g := range u.GetGroups() {
		if g == nodesGroup {
			return strings.TrimPrefix(u.GetName(), nodeUserPrefix), true
		}
	}
	return "", false
}

var (
	nodesGR  = schema.GroupResource{Resource: "nodes"}
	leasesGR = schema.GroupResource{Group: coordinationv1.GroupName, Resource: "leases"}
)

// Validate confines a node's writes to its own objects.
func (p *NodeRestriction) Validate(ctx context.Context, a *Attributes) error {
	node, ok := nodeName(a.User)
	if !ok {
		return nil
	}
	gr := a.Resource.GroupResource()
	forbid := func(format string, args ...any) error {
		return apierrors.NewForbidden(gr, objectName(a), fmt.Errorf(format, args...))
	}
	if node == "" {
		return forbid("could not determine node from user %q", a.User.GetName())
	}
	switch gr {
	case podsGR:
		return p.pod(a, node, forbid)
	case nodesGR:
		return p.node(a, node, forbid)
	case leasesGR:
		if a.Namespace != corev1.NamespaceNodeLease {
			return forbid("can only access leases in the %q system namespace", corev1.NamespaceNodeLease)
		}
		if objectName(a) != node {
			return forbid("can only access node lease with the same name as the requesting node")
		}
	case serviceAccountsGR:
		if a.Subresource == "token" {
			return p.token(ctx, a, node, forbid)
		}
	}
	return nil
}

func (p *NodeRestriction) pod(a *Attributes, node string, forbid func(string, ...any) error) error {
	switch a.Subresource {
	case "":
		switch a.Operation {
		case Create:
			pod, ok := a.Object.(*corev1.Pod)
			if !ok {
				return nil
			}
			if _, mirror := pod.Annotations[mirrorAnnotation]; !mirror {
				return forbid("pod does not have %q annotation, node %q can only create mirror pods", mirrorAnnotation, node)
			}
			if pod.Spec.NodeName != node {
				return forbid("node %q can only create pods with spec.nodeName set to itself", node)
			}
			if len(pod.OwnerReferences) > 1 {
				return forbid("node %q can only create pods with a single owner reference set to itself", node)
			}
			if len(pod.OwnerReferences) == 1 {
				o := pod.OwnerReferences[0]
				if o.APIVersion != "v1" || o.Kind != "Node" || o.Name != node {
					return forbid("node %q can only create pods with an owner reference set to itself", node)
				}
			}
			if pod.Spec.ServiceAccountName != "" {
				return forbid("node %q can not create pods that reference a service account", node)
			}
			refs := map[string]bool{}
			for _, r := range podRefs(pod) {
				refs[strings.SplitN(r, "/", 2)[0]] = true
			}
			for _, kind := range []string{"secrets", "configmaps", "persistentvolumeclaims"} {
				if refs[kind] {
					return forbid("node %q can not create pods that reference %s", node, kind)
				}
			}
		case Delete:
			if old, ok := a.OldObject.(*corev1.Pod); ok && old.Spec.NodeName != node {
				return forbid("node %q can only delete pods with spec.nodeName set to itself", node)
			}
		default:
			return forbid("unexpected operation %q, node %q can only create and delete mirror pods", a.Operation, node)
		}
	case "status":
		old, ok := a.OldObject.(*corev1.Pod)
		if a.Operation != Update || !ok {
			return forbid("unexpected operation %q", a.Operation)
		}
		if old.Spec.NodeName != node {
			return forbid("node %q can only update pod status for pods with spec.nodeName set to itself", node)
		}
	case "eviction":
		if old, ok := a.OldObject.(*corev1.Pod); ok && old.Spec.NodeName != node {
			return forbid("node %q can only evict pods with spec.nodeName set to itself", node)
		}
	default:
		return forbid("unexpected subresource %q", a.Subresource)
	}
	return nil
}

func (p *NodeRestriction) node(a *Attributes, node string, forbid func(string, ...any) error) error {
	requested := objectName(a)
	if requested != node {
		return forbid("node %q is not allowed to modify node %q", node, requested)
	}
	obj, _ := a.Object.(*corev1.Node)
	if obj == nil {
		return nil
	}
	switch a.Operation {
	case Create:
		if bad := forbiddenLabels(labelKeys(nil, obj.Labels)); len(bad) > 0 {
			return forbid("node %q is not allowed to set the following labels: %s", node, strings.Join(bad, ", "))
		}
	case Update:
		old, _ := a.OldObject.(*corev1.Node)
		if old == nil {
			return nil
		}
		if bad := forbiddenLabels(labelKeys(old.Labels, obj.Labels)); len(bad) > 0 {
			return forbid("node %q is not allowed to modify labels: %s", node, strings.Join(bad, ", "))
		}
		if a.Subresource == "" && !equality.Semantic.DeepEqual(old.Spec.Taints, obj.Spec.Taints) {
			return forbid("node %q is not allowed to modify taints", node)
		}
	}
	return nil
}

func (p *NodeRestriction) token(ctx context.Context, a *Attributes, node string, forbid func(string, ...any) error) error {
	if a.Operation != Create {
		return nil
	}
	tr, ok := a.Object.(*authenticationv1.TokenRequest)
	if !ok {
		return nil
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.Kind != "Pod" {
		return forbid("node requested token not bound to a pod")
	}
	pod, found, err := getTyped[*corev1.Pod](ctx, p.pods, storage.Key(podsGR, a.Namespace, ref.Name))
	if err != nil {
		return err
	}
	if !found {
		return forbid("node requested token bound to a pod that does not exist")
	}
	if ref.UID != "" && ref.UID != pod.UID {
		return forbid("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID)
	}
	if pod.Spec.NodeName != node {
		return forbid("node requested token bound to a pod scheduled on a different node")
	}
	return nil
}

// The kubelet's own labels, as Kubernetes lists them.
var (
	kubeletLabels = map[string]bool{
		corev1.LabelHostname: true, corev1.LabelTopologyZone: true, corev1.LabelTopologyRegion: true,
		corev1.LabelFailureDomainBetaZone: true, corev1.LabelFailureDomainBetaRegion: true,
		corev1.LabelInstanceType: true, corev1.LabelInstanceTypeStable: true,
		corev1.LabelOSStable: true, corev1.LabelArchStable: true, corev1.LabelWindowsBuild: true,
		"beta.kubernetes.io/os": true, "beta.kubernetes.io/arch": true,
	}
	kubeletLabelNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}
)

func labelNamespace(key string) string {
	if ns, _, ok := strings.Cut(key, "/"); ok {
		return ns
	}
	return ""
}

func inNamespace(ns, parent string) bool { return ns == parent || strings.HasSuffix(ns, "."+parent) }

// IsKubeletLabel reports whether a kubelet may set label key on its Node.
func IsKubeletLabel(key string) bool {
	if kubeletLabels[key] {
		return true
	}
	ns := labelNamespace(key)
	for _, allowed := range kubeletLabelNamespaces {
		if inNamespace(ns, allowed) {
			return true
		}
	}
	return false
}

// forbiddenLabels are the keys a kubelet may not set, sorted.
func forbiddenLabels(keys []string) []string {
	var out []string
	for _, k := range keys {
		ns := labelNamespace(k)
		switch {
		case inNamespace(ns, corev1.LabelNamespaceNodeRestriction):
			out = append(out, k)
		case (inNamespace(ns, "kubernetes.io") || inNamespace(ns, "k8s.io")) && !IsKubeletLabel(k):
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// labelKeys are the keys added, removed or changed between old and new.
func labelKeys(old, new map[string]string) []string {
	var out []string
	for k, v := range new {
		if ov, ok := old[k]; !ok || ov != v {
			out = append(out, k)
		}
	}
	for k := range old {
		if _, ok := new[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// podRefs lists a pod's references as "<resource>/<name>".
func podRefs(p *corev1.Pod) []string {
	var out []string
	for _, s := range p.Spec.ImagePullSecrets {
		out = append(out, "secrets/"+s.Name)
	}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.Secret != nil:
			out = append(out, "secrets/"+v.Secret.SecretName)
		case v.ConfigMap != nil:
			out = append(out, "configmaps/"+v.ConfigMap.Name)
		case v.PersistentVolumeClaim != nil:
			out = append(out, "persistentvolumeclaims/"+v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, "persistentvolumeclaims/"+p.Name+"-"+v.Name)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					out = append(out, "secrets/"+src.Secret.Name)
				}
				if src.ConfigMap != nil {
					out = append(out, "configmaps/"+src.ConfigMap.Name)
				}
			}
		}
	}
	var containers []corev1.Container
	containers = append(containers, p.Spec.InitContainers...)
	containers = append(containers, p.Spec.Containers...)
	for _, c := range containers {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				out = append(out, "secrets/"+e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				out = append(out, "configmaps/"+e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
		for _, f := range c.EnvFrom {
			if f.SecretRef != nil {
				out = append(out, "secrets/"+f.SecretRef.Name)
			}
			if f.ConfigMapRef != nil {
				out = append(out, "configmaps/"+f.ConfigMapRef.Name)
			}
		}
	}
	return out
}
