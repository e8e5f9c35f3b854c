package nodeauthz

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Kinds of objects a pod references.
const (
	kindSecret         = "secret"
	kindConfigMap      = "configmap"
	kindPVC            = "pvc"
	kindServiceAccount = "serviceaccount"
)

// graph is the Node authorizer's view of which node may read what: the
// pods bound to each node and, counted per node, the objects those pods
// reference. It is fed by a watch on pods.
type graph struct {
	mu sync.RWMutex
	// pods: namespace/name → the node it is bound to and its references.
	pods map[string]podEntry
	// refs: node → "kind/namespace/name" → number of the node's pods
	// referencing it.
	refs map[string]map[string]int
}

type podEntry struct {
	node string
	refs []string
}

func newGraph() *graph {
	return &graph{pods: map[string]podEntry{}, refs: map[string]map[string]int{}}
}

func refKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// podRefs lists what a pod references, as "kind/namespace/name" keys.
func podRefs(p *corev1.Pod) []string {
	seen := map[string]bool{}
	var out []string
	add := func(kind, name string) {
		if name == "" {
			return
		}
		k := refKey(kind, p.Namespace, name)
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sa := p.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	add(kindServiceAccount, sa)
	for _, s := range p.Spec.ImagePullSecrets {
		add(kindSecret, s.Name)
	}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.Secret != nil:
			add(kindSecret, v.Secret.SecretName)
		case v.ConfigMap != nil:
			add(kindConfigMap, v.ConfigMap.Name)
		case v.PersistentVolumeClaim != nil:
			add(kindPVC, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			add(kindPVC, p.Name+"-"+v.Name)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					add(kindSecret, src.Secret.Name)
				}
				if src.ConfigMap != nil {
					add(kindConfigMap, src.ConfigMap.Name)
				}
			}
		}
		if v.CSI != nil && v.CSI.NodePublishSecretRef != nil {
			add(kindSecret, v.CSI.NodePublishSecretRef.Name)
		}
	}
	containers := func(env []corev1.EnvVar, from []corev1.EnvFromSource) {
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add(kindSecret, r.Name)
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add(kindConfigMap, r.Name)
			}
		}
		for _, f := range from {
			if f.SecretRef != nil {
				add(kindSecret, f.SecretRef.Name)
			}
			if f.ConfigMapRef != nil {
				add(kindConfigMap, f.ConfigMapRef.Name)
			}
		}
	}
	for _, c := range p.Spec.InitContainers {
		containers(c.Env, c.EnvFrom)
	}
	for _, c := range p.Spec.Containers {
		containers(c.Env, c.EnvFrom)
	}
	for _, c := range p.Spec.EphemeralContainers {
		containers(c.Env, c.EnvFrom)
	}
	return out
}

func (g *graph) removeLocked(key string) {
	old, ok := g.pods[key]
	if !ok {
		return
	}
	delete(g.pods, key)
	m := g.refs[old.node]
	for _, r := range old.refs {
		if m[r]--; m[r] <= 0 {
			delete(m, r)
		}
	}
	if len(m) == 0 {
		delete(g.refs, old.node)
	}
}

func (g *graph) addLocked(p *corev1.Pod) {
	if p.Spec.NodeName == "" {
		return
	}
	e := podEntry{node: p.Spec.NodeName, refs: podRefs(p)}
	g.pods[p.Namespace+"/"+p.Name] = e
	m := g.refs[e.node]
	if m == nil {
		m = map[string]int{}
		g.refs[e.node] = m
	}
	for _, r := range e.refs {
		m[r]++
	}
}

// Replace, Upsert and Delete make graph a storewatch.Handler of pods.
func (g *graph) Replace(objs []runtime.Object) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pods, g.refs = map[string]podEntry{}, map[string]map[string]int{}
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			g.addLocked(p)
		}
	}
}

func (g *graph) Upsert(o runtime.Object) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removeLocked(p.Namespace + "/" + p.Name)
	g.addLocked(p)
}

func (g *graph) Delete(o runtime.Object) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removeLocked(p.Namespace + "/" + p.Name)
}

// references reports whether a pod bound to node references the object.
func (g *graph) references(node, kind, namespace, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.refs[node][refKey(kind, namespace, name)] > 0
}

// boundTo reports whether pod namespace/name is bound to node.
func (g *graph) boundTo(node, namespace, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	e, ok := g.pods[namespace+"/"+name]
	return ok && e.node == node
}
