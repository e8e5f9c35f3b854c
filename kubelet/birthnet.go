package kubelet

import (
	"context"
	"sync"
	"time"

	"github.com/podkit/podkit/cni"
)

// NetworkTimer times each sandbox's network setup for the birth trace: the
// runtime sets up a sandbox's namespaces and its network in one
// RunPodSandbox call, so only the Networker it calls knows where one ends
// and the other begins. Wrap the node's Networker with it, give the
// runtime the result and the kubelet the timer (Config.NetworkTimer); the
// trace's sandbox step is then the setup's start and its network step the
// setup's end. Times are kept per sandbox until the kubelet reads them, at
// most maxTimed.
type NetworkTimer struct {
	now    func() time.Time
	mu     sync.Mutex
	setups map[string][2]time.Time // sandbox ID → start, end
	order  []string
}

const maxTimed = 1024

// NewNetworkTimer returns a timer reading now (time.Now when nil).
func NewNetworkTimer(now func() time.Time) *NetworkTimer {
	if now == nil {
		now = time.Now
	}
	return &NetworkTimer{now: now, setups: map[string][2]time.Time{}}
}

// Wrap returns n with its successful Setups timed.
func (t *NetworkTimer) Wrap(n cni.Networker) cni.Networker {
	return &timedNetworker{Networker: n, t: t}
}

type timedNetworker struct {
	cni.Networker
	t *NetworkTimer
}

func (n *timedNetworker) Setup(ctx context.Context, a *cni.Attachment) (*cni.Result, error) {
	start := n.t.now()
	res, err := n.Networker.Setup(ctx, a)
	if err == nil {
		n.t.record(a.ContainerID, start, n.t.now())
	}
	return res, err
}

func (t *NetworkTimer) record(id string, start, end time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.setups[id]; !ok {
		t.order = append(t.order, id)
	}
	t.setups[id] = [2]time.Time{start, end}
	for len(t.order) > maxTimed {
		delete(t.setups, t.order[0])
		t.order = t.order[1:]
	}
}

// take returns and forgets the times of a sandbox's network setup.
func (t *NetworkTimer) take(id string) (start, end time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.setups[id]
	if ok {
		delete(t.setups, id)
		for i, o := range t.order {
			if o == id {
				t.order = append(t.order[:i], t.order[i+1:]...)
				break
			}
		}
	}
	return s[0], s[1], ok
}
