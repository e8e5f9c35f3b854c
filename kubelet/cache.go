package kubelet

import (
	"reflect"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/sandbox"
)

// podRuntime is what the runtime holds of one pod: its sandboxes and every
// attempt of its containers, newest first. Its elements are shared and
// never modified; updates replace them.
type podRuntime struct {
	Sandboxes  []*sandbox.Sandbox
	Containers []*sandbox.ContainerStatus
}

// latestSandbox is the pod's newest sandbox, nil without one.
func (r podRuntime) latestSandbox() *sandbox.Sandbox {
	if len(r.Sandboxes) == 0 {
		return nil
	}
	return r.Sandboxes[0]
}

// byName returns the attempts of container name, newest first; with
// sandboxID set, only those in that sandbox.
func (r podRuntime) byName(name, sandboxID string) []*sandbox.ContainerStatus {
	var out []*sandbox.ContainerStatus
	for _, c := range r.Containers {
		if c.Name == name && (sandboxID == "" || c.SandboxID == sandboxID) {
			out = append(out, c)
		}
	}
	return out
}

// runtimeCache is the kubelet's view of the runtime, kept by the PLEG
// (relists and container events) and by pod workers after each of their
// own operations, so a sync reads it instead of asking the runtime.
//
// A relist that started before a worker's update must not undo it: every
// update bumps a generation, and a relist replaces only pods not updated
// since it began. A container's state never goes back from Exited, so a
// stale read racing a fresh one cannot resurrect a container.
type runtimeCache struct {
	mu   sync.Mutex
	gen  uint64
	pods map[types.UID]*cachedPod
	// dropped remembers when a pod's last object was removed, so a relist
	// that began earlier does not bring it back.
	dropped map[types.UID]uint64
}

type cachedPod struct {
	gen        uint64
	sandboxes  map[string]*sandbox.Sandbox
	containers map[string]*sandbox.ContainerStatus
}

func newRuntimeCache() *runtimeCache {
	return &runtimeCache{pods: map[types.UID]*cachedPod{}, dropped: map[types.UID]uint64{}}
}

// generation returns the current generation (a relist's starting point).
func (c *runtimeCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *runtimeCache) entry(uid types.UID) *cachedPod {
	p := c.pods[uid]
	if p == nil {
		p = &cachedPod{sandboxes: map[string]*sandbox.Sandbox{}, containers: map[string]*sandbox.ContainerStatus{}}
		c.pods[uid] = p
	}
	c.gen++
	p.gen = c.gen
	return p
}

// get returns the pod's runtime state, newest first.
func (c *runtimeCache) get(uid types.UID) podRuntime {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pods[uid].view()
}

func (p *cachedPod) view() podRuntime {
	var r podRuntime
	if p == nil {
		return r
	}
	for _, sb := range p.sandboxes {
		r.Sandboxes = append(r.Sandboxes, sb)
	}
	for _, cs := range p.containers {
		r.Containers = append(r.Containers, cs)
	}
	sort.Slice(r.Sandboxes, func(i, j int) bool {
		a, b := r.Sandboxes[i], r.Sandboxes[j]
		if a.Pod.Attempt != b.Pod.Attempt {
			return a.Pod.Attempt > b.Pod.Attempt
		}
		return a.CreatedAt.After(b.CreatedAt)
	})
	sort.Slice(r.Containers, func(i, j int) bool {
		a, b := r.Containers[i], r.Containers[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		return a.Attempt > b.Attempt
	})
	return r
}

// podOfContainer finds the pod of a container: its label, else the pod of
// its sandbox.
func (c *runtimeCache) podOfContainerLocked(cs *sandbox.ContainerStatus) types.UID {
	if uid := podUIDOf(cs); uid != "" {
		return uid
	}
	for uid, p := range c.pods {
		if _, ok := p.sandboxes[cs.SandboxID]; ok {
			return uid
		}
	}
	return ""
}

// putContainer records a container's status and returns its pod, or ""
// when the cache held this very status already: the event of a create or
// start the pod's worker did itself (and refreshed) is no news, and waking
// the worker for it cost a whole extra sync per container.
func (c *runtimeCache) putContainer(cs *sandbox.ContainerStatus) types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	uid := c.podOfContainerLocked(cs)
	if uid == "" {
		return ""
	}
	if p := c.pods[uid]; p != nil {
		if old := p.containers[cs.ID]; old != nil && reflect.DeepEqual(old, cs) {
			return ""
		}
	}
	p := c.entry(uid)
	if old := p.containers[cs.ID]; old != nil && old.State == sandbox.ContainerStateExited && cs.State != sandbox.ContainerStateExited {
		return uid // never back from Exited: cs is older news
	}
	p.containers[cs.ID] = cs
	return uid
}

// deleteContainer forgets a container and returns its pod.
func (c *runtimeCache) deleteContainer(id string) types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	for uid, p := range c.pods {
		if _, ok := p.containers[id]; ok {
			p = c.entry(uid)
			delete(p.containers, id)
			c.dropIfEmptyLocked(uid)
			return uid
		}
	}
	return ""
}

// putSandbox records a sandbox.
func (c *runtimeCache) putSandbox(sb *sandbox.Sandbox) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entry(sandboxPodUID(sb)).sandboxes[sb.ID] = sb
}

// setSandboxState records that a sandbox changed state (after a stop).
func (c *runtimeCache) setSandboxState(uid types.UID, id string, state sandbox.SandboxState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pods[uid]
	if p == nil || p.sandboxes[id] == nil {
		return
	}
	sb := *p.sandboxes[id]
	sb.State = state
	c.entry(uid).sandboxes[id] = &sb
}

// deleteSandbox forgets a sandbox and its containers.
func (c *runtimeCache) deleteSandbox(uid types.UID, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pods[uid]
	if p == nil {
		return
	}
	p = c.entry(uid)
	delete(p.sandboxes, id)
	for cid, cs := range p.containers {
		if cs.SandboxID == id {
			delete(p.containers, cid)
		}
	}
	c.dropIfEmptyLocked(uid)
}

func (c *runtimeCache) dropIfEmptyLocked(uid types.UID) {
	if p := c.pods[uid]; p != nil && len(p.sandboxes) == 0 && len(p.containers) == 0 {
		delete(c.pods, uid)
		c.dropped[uid] = c.gen
	}
}

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
		if fingerprint(old) != fingerprint(nu) {
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
	return changed
}

// fingerprint summarises the states of a pod's sandboxes and containers.
func fingerprint(p *cachedPod) string {
	keys := make([]string, 0, len(p.sandboxes)+len(p.containers))
	for id, sb := range p.sandboxes {
		keys = append(keys, "s"+id+string(sb.State))
	}
	for id, cs := range p.containers {
		keys = append(keys, "c"+id+string(cs.State))
	}
	sort.Strings(keys)
	n := 0
	for _, k := range keys {
		n += len(k) + 1
	}
	b := make([]byte, 0, n)
	for _, k := range keys {
		b = append(append(b, k...), ',')
	}
	return string(b)
}

// uids returns every pod the runtime holds something of.
func (c *runtimeCache) uids() []types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]types.UID, 0, len(c.pods))
	for uid := range c.pods {
		out = append(out, uid)
	}
	return out
}

// counts returns the pods with a running container and the containers by
// state, for the running pods/containers gauges.
func (c *runtimeCache) counts() (pods int, byState map[sandbox.ContainerState]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	byState = map[sandbox.ContainerState]int{}
	for _, p := range c.pods {
		running := false
		for _, cs := range p.containers {
			byState[cs.State]++
			running = running || cs.State == sandbox.ContainerStateRunning
		}
		if running {
			pods++
		}
	}
	return pods, byState
}
