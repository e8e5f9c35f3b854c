package dns

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	mdns "github.com/miekg/dns"
)

// ErrNoUpstream is returned (wrapped) when every upstream failed.
var ErrNoUpstream = errors.New("no upstream answered")

// forwarder relays questions outside the cluster zone to the upstreams.
type forwarder struct {
	upstreams []string
	next      atomic.Uint32
	udp, tcp  *mdns.Client
	metrics   *metrics
}

func newForwarder(upstreams []string, timeout time.Duration, m *metrics) *forwarder {
	if len(upstreams) == 0 {
		return nil
	}
	return &forwarder{
		upstreams: append([]string(nil), upstreams...),
		udp:       &mdns.Client{Net: "udp", Timeout: timeout, UDPSize: mdns.MaxMsgSize},
		tcp:       &mdns.Client{Net: "tcp", Timeout: timeout},
		metrics:   m,
	}
}

// exchange sends req to the upstreams in turn, starting from a rotating
// one, until one answers; tcp picks the transport (the client's, so a
// truncated UDP answer makes the client retry over TCP, which is then
// forwarded over TCP). The answer carries req's ID.
func (f *forwarder) exchange(ctx context.Context, req *mdns.Msg, tcp bool) (*mdns.Msg, error) {
	c := f.udp
	if tcp {
		c = f.tcp
	}
	out := req.Copy()
	out.Id = mdns.Id()
	start := int(f.next.Add(1) - 1)
	var errs []error
	for i := range f.upstreams {
		up := f.upstreams[(start+i)%len(f.upstreams)]
		f.metrics.forwardRequests.WithLabelValues(up).Inc()
		resp, _, err := c.ExchangeContext(ctx, out, up)
		if err != nil {
			f.metrics.forwardResponses.WithLabelValues(up, "error").Inc()
			errs = append(errs, fmt.Errorf("%s: %w", up, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		f.metrics.forwardResponses.WithLabelValues(up, rcodeLabel(resp.Rcode)).Inc()
		resp.Id = req.Id
		return resp, nil
	}
	return nil, fmt.Errorf("dns: forwarding %s: %w: %w", questionString(req), ErrNoUpstream, errors.Join(errs...))
}

func questionString(m *mdns.Msg) string {
	if len(m.Question) == 0 {
		return "(no question)"
	}
	q := m.Question[0]
	return q.Name + " " + mdns.TypeToString[q.Qtype]
}
