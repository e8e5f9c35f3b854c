package podkit

import (
	"context"
	"time"
)

// reportReady posts the node's status as soon as its kubelet is healthy,
// rather than at nodestatus' next period (10 s by default): the node
// registered while its runtime was still starting, so its first status
// said NotReady, and `podkit up` waits for Ready. A failed post is tried
// again on the next tick. Once one went through, Posted is closed.
func (n *Node) reportReady(ctx context.Context) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(time.Minute)
	warned := false
	for {
		if n.ready() == nil {
			err := n.status.Sync(ctx)
			if err == nil {
				close(n.posted)
				return
			}
			if ctx.Err() == nil && !warned {
				n.log.Warn("posting the node status; retrying", "err", err)
				warned = true
			}
		}
		if time.Now().After(deadline) {
			return // the periodic sync reports whatever comes
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Posted is closed once this node, in this process, has posted a status
// saying Ready: its kubelet is healthy. A node object can say Ready before
// (a resumed cluster's node keeps its last status until the new one is
// posted), so this is what `podkit up` waits for.
func (n *Node) Posted() <-chan struct{} { return n.posted }
