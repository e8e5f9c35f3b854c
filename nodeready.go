package podkit

import (
	"context"
	"time"
)

// reportReady posts the node's status as soon as its kubelet is healthy,
// rather than at nodestatus' next period (10 s by default): the node
// registered while its runtime was still starting, so its first status
// said NotReady, and `podkit up` waits for Ready.
func (n *Node) reportReady(ctx context.Context) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(time.Minute)
	for n.ready() != nil {
		if time.Now().After(deadline) {
			return // the periodic sync reports whatever comes
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	if err := n.status.Sync(ctx); err != nil && ctx.Err() == nil {
		n.log.Warn("posting the node status", "err", err)
	}
}
