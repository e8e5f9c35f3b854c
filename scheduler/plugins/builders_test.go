package plugins

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/scheduler"
)

// Small builders in the style of Kubernetes' st.MakePod / st.MakeNode.

type podBuilder struct{ p *corev1.Pod }

var podSeq int

func pod(name string) *podBuilder {
	podSeq++
	return &podBuilder{p: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(fmt.Sprintf("%s-%d", name, podSeq))},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}},
	}}
}

func (b *podBuilder) obj() *corev1.Pod { return b.p }

func (b *podBuilder) ns(ns string) *podBuilder { b.p.Namespace = ns; return b }

func (b *podBuilder) node(n string) *podBuilder { b.p.Spec.NodeName = n; return b }

func (b *podBuilder) labels(kv ...string) *podBuilder {
	if b.p.Labels == nil {
		b.p.Labels = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		b.p.Labels[kv[i]] = kv[i+1]
	}
	return b
}

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// req sets the requests of the first container.
func (b *podBuilder) req(kv ...string) *podBuilder {
	b.p.Spec.Containers[0].Resources.Requests = rl(kv...)
	return b
}

// container adds an app container with requests.
func (b *podBuilder) container(kv ...string) *podBuilder {
	b.p.Spec.Containers = append(b.p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", len(b.p.Spec.Containers)), Image: "img", Resources: corev1.ResourceRequirements{Requests: rl(kv...)}})
	return b
}

func (b *podBuilder) init(kv ...string) *podBuilder {
	b.p.Spec.InitContainers = append(b.p.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("i%d", len(b.p.Spec.InitContainers)), Image: "img", Resources: corev1.ResourceRequirements{Requests: rl(kv...)}})
	return b
}

func (b *podBuilder) sidecar(kv ...string) *podBuilder {
	always := corev1.ContainerRestartPolicyAlways
	b.init(kv...)
	b.p.Spec.InitContainers[len(b.p.Spec.InitContainers)-1].RestartPolicy = &always
	return b
}

func (b *podBuilder) overhead(kv ...string) *podBuilder { b.p.Spec.Overhead = rl(kv...); return b }

func (b *podBuilder) image(img string) *podBuilder { b.p.Spec.Containers[0].Image = img; return b }

func (b *podBuilder) hostPort(port int32, proto corev1.Protocol, ip string) *podBuilder {
	c := &b.p.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: proto, HostIP: ip})
	return b
}

func (b *podBuilder) toleration(key, value string, op corev1.TolerationOperator, effect corev1.TaintEffect) *podBuilder {
	b.p.Spec.Tolerations = append(b.p.Spec.Tolerations, corev1.Toleration{Key: key, Value: value, Operator: op, Effect: effect})
	return b
}

func (b *podBuilder) nodeSelector(kv ...string) *podBuilder {
	b.p.Spec.NodeSelector = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		b.p.Spec.NodeSelector[kv[i]] = kv[i+1]
	}
	return b
}

func (b *podBuilder) affinity() *corev1.Affinity {
	if b.p.Spec.Affinity == nil {
		b.p.Spec.Affinity = &corev1.Affinity{}
	}
	return b.p.Spec.Affinity
}

func (b *podBuilder) requiredNodeAffinity(terms ...corev1.NodeSelectorTerm) *podBuilder {
	a := b.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: terms}
	return b
}

func (b *podBuilder) preferredNodeAffinity(weight int32, term corev1.NodeSelectorTerm) *podBuilder {
	a := b.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.PreferredSchedulingTerm{Weight: weight, Preference: term})
	return b
}

func term(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

func podTerm(topologyKey string, kv ...string) corev1.PodAffinityTerm {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: m}, TopologyKey: topologyKey}
}

func (b *podBuilder) podAffinity(t corev1.PodAffinityTerm) *podBuilder {
	a := b.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, t)
	return b
}

func (b *podBuilder) podAntiAffinity(t corev1.PodAffinityTerm) *podBuilder {
	a := b.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, t)
	return b
}

func (b *podBuilder) preferredPodAffinity(w int32, t corev1.PodAffinityTerm) *podBuilder {
	a := b.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: w, PodAffinityTerm: t})
	return b
}

func (b *podBuilder) preferredPodAntiAffinity(w int32, t corev1.PodAffinityTerm) *podBuilder {
	a := b.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: w, PodAffinityTerm: t})
	return b
}

func (b *podBuilder) spread(maxSkew int32, key string, when corev1.UnsatisfiableConstraintAction, kv ...string) *podBuilder {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b.p.Spec.TopologySpreadConstraints = append(b.p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when, LabelSelector: &metav1.LabelSelector{MatchLabels: m},
	})
	return b
}

type nodeBuilder struct{ n *corev1.Node }

func node(name string) *nodeBuilder {
	return &nodeBuilder{n: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}}
}

func (b *nodeBuilder) obj() *corev1.Node { return b.n }

func (b *nodeBuilder) labels(kv ...string) *nodeBuilder {
	for i := 0; i+1 < len(kv); i += 2 {
		b.n.Labels[kv[i]] = kv[i+1]
	}
	return b
}

func (b *nodeBuilder) alloc(kv ...string) *nodeBuilder {
	b.n.Status.Allocatable = rl(kv...)
	b.n.Status.Capacity = rl(kv...)
	return b
}

func (b *nodeBuilder) taint(key, value string, effect corev1.TaintEffect) *nodeBuilder {
	b.n.Spec.Taints = append(b.n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return b
}

func (b *nodeBuilder) unschedulable() *nodeBuilder { b.n.Spec.Unschedulable = true; return b }

func (b *nodeBuilder) image(size int64, names ...string) *nodeBuilder {
	b.n.Status.Images = append(b.n.Status.Images, corev1.ContainerImage{Names: names, SizeBytes: size})
	return b
}

// runFilter runs a plugin's PreFilter (if any) and Filter for pod on the
// named node of a snapshot of nodes and pods.
func runFilter(pl scheduler.Plugin, p *corev1.Pod, nodeName string, nodes []*corev1.Node, pods []*corev1.Pod) error {
	return runFilterVia(pl, p, nodeName, nodes, pods, nil)
}

// runFilterVia is runFilter with the node's NodeInfo passed through pick
// (when non-nil) before Filter sees it.
func runFilterVia(pl scheduler.Plugin, p *corev1.Pod, nodeName string, nodes []*corev1.Node, pods []*corev1.Pod,
	pick func(*scheduler.Snapshot, *scheduler.NodeInfo) (*scheduler.NodeInfo, error)) error {
	snap := scheduler.NewSnapshot(pods, nodes)
	s := scheduler.NewCycleState(snap)
	ctx := context.Background()
	if pf, ok := pl.(scheduler.PreFilter); ok {
		if err := pf.PreFilter(ctx, s, p); err != nil {
			if err == scheduler.ErrSkip {
				return nil
			}
			return err
		}
	}
	ni, err := snap.Get(nodeName)
	if err != nil {
		return err
	}
	if pick != nil {
		if ni, err = pick(snap, ni); err != nil {
			return err
		}
	}
	return pl.(scheduler.Filter).Filter(ctx, s, p, ni)
}

// runScore runs PreScore, Score and NormalizeScore over every node of the
// snapshot (all treated as feasible) and returns the scores by node name.
// A PreScore ErrSkip yields nil.
func runScore(pl scheduler.Plugin, p *corev1.Pod, nodes []*corev1.Node, pods []*corev1.Pod) (map[string]int64, error) {
	snap := scheduler.NewSnapshot(pods, nodes)
	s := scheduler.NewCycleState(snap)
	ctx := context.Background()
	if ps, ok := pl.(scheduler.PreScore); ok {
		if err := ps.PreScore(ctx, s, p, snap.List()); err != nil {
			if err == scheduler.ErrSkip {
				return nil, nil
			}
			return nil, err
		}
	}
	scores := make([]scheduler.NodeScore, 0, len(nodes))
	for _, ni := range snap.List() {
		v, err := pl.(scheduler.Scorer).Score(ctx, s, p, ni)
		if err != nil {
			return nil, err
		}
		scores = append(scores, scheduler.NodeScore{Name: ni.Name(), Score: v})
	}
	if n, ok := pl.(scheduler.ScoreNormalizer); ok {
		if err := n.NormalizeScore(ctx, s, p, scores); err != nil {
			return nil, err
		}
	}
	out := map[string]int64{}
	for _, sc := range scores {
		out[sc.Name] = sc.Score
	}
	return out, nil
}

// reasonsOf returns the reasons of a filter result ("" for nil).
func reasonsOf(err error) string {
	if err == nil {
		return ""
	}
	rs := scheduler.Reasons(err)
	out := ""
	for i, r := range rs {
		if i > 0 {
			out += "; "
		}
		out += r
	}
	return out
}
