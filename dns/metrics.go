package dns

import (
	"errors"
	"fmt"

	mdns "github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus collectors, named as CoreDNS names
// them so cluster DNS dashboards work unchanged.
type metrics struct {
	requests         *prometheus.CounterVec
	responses        *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	forwardRequests  *prometheus.CounterVec
	forwardResponses *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "coredns", Subsystem: "dns", Name: "requests_total",
			Help: "Counter of DNS requests made per zone, protocol and family.",
		}, []string{"server", "zone", "proto", "family", "type"}),
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "coredns", Subsystem: "dns", Name: "responses_total",
			Help: "Counter of response status codes.",
		}, []string{"server", "zone", "rcode"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "coredns", Subsystem: "dns", Name: "request_duration_seconds",
			Help:    "Histogram of the time (in seconds) each request took per zone.",
			Buckets: prometheus.ExponentialBuckets(0.00025, 2, 16),
		}, []string{"server", "zone", "type"}),
		forwardRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "coredns", Subsystem: "forward", Name: "requests_total",
			Help: "Counter of requests made per upstream.",
		}, []string{"to"}),
		forwardResponses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "coredns", Subsystem: "forward", Name: "responses_total",
			Help: "Counter of responses received per upstream (rcode \"error\" for a failed exchange).",
		}, []string{"to", "rcode"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.responses, m.duration, m.forwardRequests, m.forwardResponses} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("dns: metrics already registered (one Registerer per server): %w", err)
			}
			return nil, fmt.Errorf("dns: register metrics: %w", err)
		}
	}
	return m, nil
}

// typeLabel bounds the cardinality of the type label as CoreDNS does.
func typeLabel(t uint16) string {
	switch t {
	case mdns.TypeA, mdns.TypeAAAA, mdns.TypeSRV, mdns.TypePTR, mdns.TypeCNAME, mdns.TypeTXT,
		mdns.TypeSOA, mdns.TypeNS, mdns.TypeMX, mdns.TypeANY, mdns.TypeHTTPS, mdns.TypeSVCB:
		return mdns.TypeToString[t]
	}
	return "other"
}

func rcodeLabel(rc int) string {
	if s, ok := mdns.RcodeToString[rc]; ok {
		return s
	}
	return fmt.Sprint(rc)
}
