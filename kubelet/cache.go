package kubelet

import (
	"maps"
	"reflect"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/sandbox"
)

// podRuntime is what the runtime holds of one pod: its sandboxes and every
// attempt of its containers, newest first. Its slices and their elements
// are shared and never modified; updates replace them.
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
	// podOf indexes pods by the IDs of their containers.
	podOf map[string]types.UID
}

type cachedPod struct {
	gen        uint64
	sandboxes  map[string]*sandbox.Sandbox
	containers map[string]*sandbox.ContainerStatus
	// sorted is the pod's view, made by the first get after a change
	// (valid when sortedOK): a sync reads it several times.
	sorted   podRuntime
	sortedOK bool
}

func newRuntimeCache() *runtimeCache {
	return &runtimeCache{pods: map[types.UID]*cachedPod{}, dropped: map[types.UID]uint64{}, podOf: map[string]types.UID{}}
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
	p.sortedOK = false // about to change
	return p
}

// get returns the pod's runtime state, newest first.
func (c *runtimeCache) get(uid types.UID) podRuntime {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pods[uid]
	if p == nil {
		return podRuntime{}
	}
	if !p.sortedOK {
		p.sorted, p.sortedOK = p.view(), true
	}
	return p.sorted
}

func (p *cachedPod) view() podRuntime {
	r := podRuntime{
		Sandboxes:  make([]*sandbox.Sandbox, 0, len(p.sandboxes)),
		Containers: make([]*sandbox.ContainerStatus, 0, len(p.containers)),
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
		if old := p.containers[cs.ID]; old != nil && sameContainerStatus(old, cs) {
			return ""
		}
	}
	p := c.entry(uid)
	if old := p.containers[cs.ID]; old != nil && old.State == sandbox.ContainerStateExited && cs.State != sandbox.ContainerStateExited {
		return uid // never back from Exited: cs is older news
	}
	p.containers[cs.ID] = cs
	c.podOf[cs.ID] = uid
	return uid
}

// sameContainerStatus is reflect.DeepEqual(a, b), without reflection in
// the common case of equal statuses: their fields compare equal with ==,
// and their maps hold the same entries (and are both nil or both not).
// (TestSameContainerStatus checks that it looks at every field.)
func sameContainerStatus(a, b *sandbox.ContainerStatus) bool {
	if a.ID != b.ID || a.SandboxID != b.SandboxID || a.Name != b.Name || a.Attempt != b.Attempt ||
		a.State != b.State || a.CreatedAt != b.CreatedAt || a.StartedAt != b.StartedAt ||
		a.FinishedAt != b.FinishedAt || a.ExitCode != b.ExitCode || a.Reason != b.Reason ||
		a.Message != b.Message || a.PID != b.PID || a.Image != b.Image || a.ImageID != b.ImageID ||
		a.LogPath != b.LogPath {
		// Times with equal instants and locations that are different
		// pointers to equal zones differ for == alone.
		return reflect.DeepEqual(a, b)
	}
	return sameMap(a.Labels, b.Labels) && sameMap(a.Annotations, b.Annotations)
}

// sameMap is reflect.DeepEqual of two string maps.
func sameMap(a, b map[string]string) bool {
	return (a == nil) == (b == nil) && maps.Equal(a, b)
}

// reflects says the cache holds container id in the state an event of
// type typ announces, or a later one (a container only moves from
// created to running to exited).
func (c *runtimeCache) reflects(id string, typ sandbox.ContainerEventType) bool {
	var announced int
	switch typ {
	case sandbox.ContainerCreated:
		announced = 1
	case sandbox.ContainerStarted:
		announced = 2
	case sandbox.ContainerStopped:
		announced = 3
	default:
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pods[c.podOf[id]]; p != nil {
		if cs := p.containers[id]; cs != nil {
			return stateRank(cs.State) >= announced
		}
	}
	return false
}

// stateRank orders container states as a container goes through them (0:
// unknown).
func stateRank(s sandbox.ContainerState) int {
	switch s {
	case sandbox.ContainerStateCreated:
		return 1
	case sandbox.ContainerStateRunning:
		return 2
	case sandbox.ContainerStateExited:
		return 3
	}
	return 0
}

// deleteContainer forgets a container and returns its pod.
func (c *runtimeCache) deleteContainer(id string) types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	uid, ok := c.podOf[id]
	if !ok {
		return ""
	}
	delete(c.podOf, id)
	if p := c.pods[uid]; p == nil || p.containers[id] == nil {
		return ""
	}
	delete(c.entry(uid).containers, id)
	c.dropIfEmptyLocked(uid)
	return uid
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
			delete(c.podOf, cid)
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
