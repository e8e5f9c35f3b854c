package etcd

import (
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the store's request metrics, named as kube-apiserver's.
type metrics struct {
	duration *prometheus.HistogramVec
	total    *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "etcd_request_duration_seconds",
			Help:    "Etcd request latency in seconds for each operation and object type.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"operation", "type"}),
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etcd_requests_total",
			Help: "Etcd request counts for each operation and object type.",
		}, []string{"operation", "type"}),
	}
	if r == nil {
		return m, nil
	}
	var err error
	if m.duration, err = register(r, m.duration); err != nil {
		return nil, err
	}
	if m.total, err = register(r, m.total); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or reuses the collector already registered under
// its name (several stores may share a registry).
func register[C prometheus.Collector](r prometheus.Registerer, c C) (C, error) {
	if err := r.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

// observe starts timing one request; call the result when it is done.
func (m *metrics) observe(op, key string) func() {
	start := time.Now()
	return func() {
		typ := objectType(key)
		m.duration.WithLabelValues(op, typ).Observe(time.Since(start).Seconds())
		m.total.WithLabelValues(op, typ).Inc()
	}
}

// objectType names the resource of a storage key: "pods",
// "apps/deployments" (a group has no dot only when it is one of the few
// short built-in groups).
func objectType(key string) string {
	parts := strings.SplitN(strings.TrimPrefix(key, "/registry/"), "/", 3)
	if parts[0] == "" {
		return "unknown"
	}
	if len(parts) > 1 && (strings.Contains(parts[0], ".") || shortGroups[parts[0]]) {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}

var shortGroups = map[string]bool{"apps": true, "batch": true, "policy": true, "autoscaling": true}
