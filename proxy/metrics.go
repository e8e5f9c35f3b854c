package proxy

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the proxy's Prometheus metrics, named as kube-proxy's.
type metrics struct {
	sync, full, partial prometheus.Histogram
	last                prometheus.Gauge
	programming         prometheus.Histogram
	failures            prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	buckets := prometheus.ExponentialBuckets(0.0001, 2, 18) // 100µs .. 13s
	m := &metrics{
		sync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubeproxy", Name: "sync_proxy_rules_duration_seconds",
			Help: "SyncProxyRules latency in seconds", Buckets: buckets,
		}),
		full: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubeproxy", Name: "sync_full_proxy_rules_duration_seconds",
			Help: "SyncProxyRules latency in seconds for full resyncs", Buckets: buckets,
		}),
		partial: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubeproxy", Name: "sync_partial_proxy_rules_duration_seconds",
			Help: "SyncProxyRules latency in seconds for partial resyncs", Buckets: buckets,
		}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: "kubeproxy", Name: "sync_proxy_rules_last_timestamp_seconds",
			Help: "The last time proxy rules were successfully synced",
		}),
		programming: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubeproxy", Name: "network_programming_duration_seconds",
			Help:    "In Cluster Network Programming Latency in seconds",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 20), // 1ms .. 9min
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "kubeproxy", Name: "sync_proxy_rules_nftables_sync_failures_total",
			Help: "Cumulative proxy nftables sync failures",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.sync, m.full, m.partial, m.last, m.programming, m.failures} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("registering proxy metrics: %w", err)
			}
		}
	}
	return m, nil
}

func (m *metrics) observeSync(full bool, d time.Duration, at time.Time) {
	m.sync.Observe(d.Seconds())
	if full {
		m.full.Observe(d.Seconds())
	} else {
		m.partial.Observe(d.Seconds())
	}
	m.last.Set(float64(at.UnixNano()) / 1e9)
}
