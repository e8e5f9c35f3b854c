package kubelet

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/sandbox"
)

// The relist's side of runtimeCache: a full listing replaces what the
// cache holds, except what workers updated since the listing began.

// replace installs a full listing taken when the generation was since,
// keeping pods updated after that, and returns the pods whose state
// changed.
func (c *runtimeCache) replace(since uint64, sbs []*sandbox.Sandbox, cs []*sandbox.ContainerStatus) map[types.UID]bool {
	fresh := map[types.UID]*cachedPod{}
	get := func(uid types.UID) *cachedPod {
		p := fresh[uid]
		if p == nil {
			p = &cachedPod{sandboxes: map[string]*sandbox.Sandbox{}, containers: map[string]*sandbox.ContainerStatus{}}
			fresh[uid] = p
		}
		return p
	}
	sbPod := map[string]types.UID{}
	for _, sb := range sbs {
		uid := sandboxPodUID(sb)
		if uid == "" {
			continue
		}
		sbPod[sb.ID] = uid
		get(uid).sandboxes[sb.ID] = sb
	}
	for _, st := range cs {
		uid := podUIDOf(st)
		if uid == "" {
			uid = sbPod[st.SandboxID]
		}
		if uid == "" {
			continue
		}
		get(uid).containers[st.ID] = st
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	changed := map[types.UID]bool{}
	for uid, old := range c.pods {
		if old.gen > since {
			delete(fresh, uid) // a worker knows better
			continue
		}
		nu := fresh[uid]
		if nu == nil {
			changed[uid] = true
			delete(c.pods, uid)
			continue
		}
		for id, cs := range nu.containers {
			if o := old.containers[id]; o != nil && o.State == sandbox.ContainerStateExited && cs.State != sandbox.ContainerStateExited {
				nu.containers[id] = o
			}
		}
		if !sameStates(old, nu) {
			changed[uid] = true
		}
		nu.gen = old.gen
		c.pods[uid] = nu
		delete(fresh, uid)
	}
	for uid, nu := range fresh {
		if c.dropped[uid] > since {
			continue // removed by a worker while the listing was taken
		}
		changed[uid] = true
		c.pods[uid] = nu
	}
	for uid, g := range c.dropped {
		if g <= since {
			delete(c.dropped, uid) // older than this listing: it saw the removal
		}
	}
	clear(c.podOf)
	for uid, p := range c.pods {
		for id := range p.containers {
			c.podOf[id] = uid
		}
	}
	return changed
}

// sameStates says two views of a pod hold the same sandboxes and
// containers in the same states.
func sameStates(a, b *cachedPod) bool {
	if len(a.sandboxes) != len(b.sandboxes) || len(a.containers) != len(b.containers) {
		return false
	}
	for id, sb := range a.sandboxes {
		if o := b.sandboxes[id]; o == nil || o.State != sb.State {
			return false
		}
	}
	for id, cs := range a.containers {
		if o := b.containers[id]; o == nil || o.State != cs.State {
			return false
		}
	}
	return true
}
