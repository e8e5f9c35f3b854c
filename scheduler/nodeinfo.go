package scheduler

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodInfo is a pod with what the scheduler derives from it once: requests,
// affinity terms and host ports. It is immutable once built.
type PodInfo struct {
	Pod *corev1.Pod
	// Requests are the pod's effective requests (see PodRequests);
	// NonZeroRequests count defaults for containers requesting nothing.
	Requests        Resource
	NonZeroRequests Resource

	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm

	// HostPorts are the container ports that claim a host port.
	HostPorts []corev1.ContainerPort
	// LabelsID is the pod's namespace and sorted labels as one string:
	// pods of one workload share it, so plugins can memoise selector
	// matches per cycle.
	LabelsID string
	// ParseError records an invalid affinity term (the term is ignored).
	ParseError error
}

// NewPodInfo derives a PodInfo from pod.
func NewPodInfo(pod *corev1.Pod) *PodInfo {
	pi := &PodInfo{Pod: pod, Requests: PodRequests(pod, false), NonZeroRequests: PodRequests(pod, true)}
	var errs []error
	if a := pod.Spec.Affinity; a != nil {
		var err error
		if pa := a.PodAffinity; pa != nil {
			pi.RequiredAffinityTerms, err = affinityTerms(pod, pa.RequiredDuringSchedulingIgnoredDuringExecution)
			errs = append(errs, err)
			pi.PreferredAffinityTerms, err = weightedAffinityTerms(pod, pa.PreferredDuringSchedulingIgnoredDuringExecution)
			errs = append(errs, err)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			pi.RequiredAntiAffinityTerms, err = affinityTerms(pod, pa.RequiredDuringSchedulingIgnoredDuringExecution)
			errs = append(errs, err)
			pi.PreferredAntiAffinityTerms, err = weightedAffinityTerms(pod, pa.PreferredDuringSchedulingIgnoredDuringExecution)
			errs = append(errs, err)
		}
	}
	pi.ParseError = errors.Join(errs...)
	pi.HostPorts = hostPorts(pod)
	pi.LabelsID = labelsID(pod)
	return pi
}

func labelsID(pod *corev1.Pod) string {
	keys := make([]string, 0, len(pod.Labels))
	for k := range pod.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(pod.Namespace)
	for _, k := range keys {
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(pod.Labels[k])
	}
	return b.String()
}

// HasAffinity reports whether the pod has any pod (anti-)affinity term.
func (pi *PodInfo) HasAffinity() bool {
	return len(pi.RequiredAffinityTerms)+len(pi.RequiredAntiAffinityTerms)+
		len(pi.PreferredAffinityTerms)+len(pi.PreferredAntiAffinityTerms) > 0
}

// hostPorts returns the ports of app containers and sidecars that claim a
// host port.
func hostPorts(pod *corev1.Pod) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	add := func(cs []corev1.Container, sidecarsOnly bool) {
		for i := range cs {
			if sidecarsOnly && (cs[i].RestartPolicy == nil || *cs[i].RestartPolicy != corev1.ContainerRestartPolicyAlways) {
				continue
			}
			for _, p := range cs[i].Ports {
				if p.HostPort > 0 {
					out = append(out, p)
				}
			}
		}
	}
	add(pod.Spec.InitContainers, true)
	add(pod.Spec.Containers, false)
	return out
}

// HostPort is one claimed host port.
type HostPort struct {
	IP       string // "0.0.0.0" when unset
	Protocol corev1.Protocol
	Port     int32
}

// NewHostPort normalises a container port's host side.
func NewHostPort(p corev1.ContainerPort) HostPort {
	hp := HostPort{IP: p.HostIP, Protocol: p.Protocol, Port: p.HostPort}
	if hp.IP == "" {
		hp.IP = "0.0.0.0"
	}
	if hp.Protocol == "" {
		hp.Protocol = corev1.ProtocolTCP
	}
	return hp
}

// HostPortInfo counts the host ports used on a node.
type HostPortInfo map[HostPort]int

// Conflicts reports whether p collides with a used port: same protocol and
// port, and the same IP or either side on 0.0.0.0.
func (h HostPortInfo) Conflicts(p HostPort) bool {
	if len(h) == 0 {
		return false
	}
	if p.IP == "0.0.0.0" {
		for used := range h {
			if used.Port == p.Port && used.Protocol == p.Protocol {
				return true
			}
		}
		return false
	}
	return h[p] > 0 || h[HostPort{IP: "0.0.0.0", Protocol: p.Protocol, Port: p.Port}] > 0
}

// NodeInfo is a node with the pods the scheduler counts on it (bound and
// assumed) and the aggregates plugins need.
type NodeInfo struct {
	node *corev1.Node
	// name, unschedulable and taints repeat the node's: the framework and
	// the Filter and Score plugins every node passes through read them
	// from here, sparing a visit to the Node object (a cache miss per node
	// and cycle on large clusters).
	name          string
	unschedulable bool
	taints        []corev1.Taint

	Pods                         []*PodInfo
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	UsedPorts                    HostPortInfo

	// Requested is the sum of the pods' requests; NonZeroRequested counts
	// defaults for best-effort containers (scoring only).
	Requested        Resource
	NonZeroRequested Resource
	Allocatable      Resource

	// Images maps every name of an image present on the node (from
	// node.status.images) to its size in bytes. Shared, read-only.
	Images map[string]int64

	// Generation increases on every change; snapshots copy changed nodes.
	Generation int64

	// snapshot is the Snapshot holding this NodeInfo (nil for the cache's
	// NodeInfos and for copies): see Snapshot.Holds.
	snapshot *Snapshot
}

// NewNodeInfo returns a NodeInfo for node with pods already on it.
func NewNodeInfo(node *corev1.Node, pods ...*corev1.Pod) *NodeInfo {
	ni := &NodeInfo{}
	if node != nil {
		ni.SetNode(node)
	}
	for _, p := range pods {
		ni.AddPodInfo(NewPodInfo(p))
	}
	return ni
}

// Node returns the node, nil for a node deleted while pods remain on it.
func (n *NodeInfo) Node() *corev1.Node { return n.node }

// Unschedulable returns the node's spec.unschedulable.
func (n *NodeInfo) Unschedulable() bool { return n.unschedulable }

// Taints returns the node's spec.taints (shared: read-only).
func (n *NodeInfo) Taints() []corev1.Taint { return n.taints }

// Name returns the node's name.
func (n *NodeInfo) Name() string { return n.name }

// SetNode sets the node and its allocatable.
func (n *NodeInfo) SetNode(node *corev1.Node) {
	n.node = node
	n.name, n.unschedulable, n.taints = node.Name, node.Spec.Unschedulable, node.Spec.Taints
	n.Allocatable = NewResource(node.Status.Allocatable)
	n.Images = nodeImages(node)
}

// clearNode forgets the node and what SetNode copied of it (the node was
// deleted while pods remain on it).
func (n *NodeInfo) clearNode() {
	n.node, n.name, n.unschedulable, n.taints = nil, "", false, nil
	n.Images = nil
}

// nodeImages maps every name of every image in node.status.images to its
// size. Names are normalised like pod images (a missing tag is :latest).
func nodeImages(node *corev1.Node) map[string]int64 {
	if len(node.Status.Images) == 0 {
		return nil
	}
	m := make(map[string]int64, len(node.Status.Images))
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			m[NormalizeImageName(name)] = img.SizeBytes
		}
	}
	return m
}

// NormalizeImageName appends ":latest" to an image reference without a tag
// or digest, so "nginx" and "nginx:latest" are the same image.
func NormalizeImageName(name string) string {
	if strings.LastIndex(name, ":") <= strings.LastIndex(name, "/") {
		name += ":latest"
	}
	return name
}

// AddPodInfo counts a pod on the node.
func (n *NodeInfo) AddPodInfo(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if pi.HasAffinity() {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if len(pi.RequiredAntiAffinityTerms) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.update(pi, 1)
}

// RemovePod uncounts the pod with pod's UID.
func (n *NodeInfo) RemovePod(pod *corev1.Pod) error {
	n.PodsWithAffinity = removeFrom(n.PodsWithAffinity, pod)
	n.PodsWithRequiredAntiAffinity = removeFrom(n.PodsWithRequiredAntiAffinity, pod)
	for i, pi := range n.Pods {
		if pi.Pod.UID == pod.UID {
			last := len(n.Pods) - 1
			n.Pods[i] = n.Pods[last]
			n.Pods[last] = nil
			n.Pods = n.Pods[:last]
			n.update(pi, -1)
			return nil
		}
	}
	return fmt.Errorf("pod %s/%s on node %s: %w", pod.Namespace, pod.Name, n.Name(), ErrNotFound)
}

func removeFrom(list []*PodInfo, pod *corev1.Pod) []*PodInfo {
	for i, pi := range list {
		if pi.Pod.UID == pod.UID {
			last := len(list) - 1
			list[i] = list[last]
			list[last] = nil
			return list[:last]
		}
	}
	return list
}

func (n *NodeInfo) update(pi *PodInfo, sign int64) {
	if sign > 0 {
		n.Requested.AddResource(&pi.Requests)
		n.NonZeroRequested.AddResource(&pi.NonZeroRequests)
	} else {
		n.Requested.SubResource(&pi.Requests)
		n.NonZeroRequested.SubResource(&pi.NonZeroRequests)
	}
	if len(pi.HostPorts) > 0 && n.UsedPorts == nil {
		n.UsedPorts = HostPortInfo{}
	}
	for _, p := range pi.HostPorts {
		hp := NewHostPort(p)
		n.UsedPorts[hp] += int(sign)
		if n.UsedPorts[hp] <= 0 {
			delete(n.UsedPorts, hp)
		}
	}
}

// Clone returns a copy sharing the immutable pods and node objects.
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{}
	n.cloneInto(c)
	return c
}

// cloneInto overwrites c with a copy of n, as Clone, keeping c's address
// (the snapshot's NodeInfos stay where they were placed).
func (n *NodeInfo) cloneInto(c *NodeInfo) {
	*c = NodeInfo{
		node:             n.node,
		name:             n.name,
		unschedulable:    n.unschedulable,
		taints:           n.taints,
		Requested:        n.Requested.Clone(),
		NonZeroRequested: n.NonZeroRequested.Clone(),
		Allocatable:      n.Allocatable.Clone(),
		Images:           n.Images,
		Generation:       n.Generation,
		snapshot:         c.snapshot, // c stays where it is held
	}
	c.Pods = append([]*PodInfo(nil), n.Pods...)
	if len(n.PodsWithAffinity) > 0 {
		c.PodsWithAffinity = append([]*PodInfo(nil), n.PodsWithAffinity...)
	}
	if len(n.PodsWithRequiredAntiAffinity) > 0 {
		c.PodsWithRequiredAntiAffinity = append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...)
	}
	if len(n.UsedPorts) > 0 {
		c.UsedPorts = make(HostPortInfo, len(n.UsedPorts))
		for k, v := range n.UsedPorts {
			c.UsedPorts[k] = v
		}
	}
}
