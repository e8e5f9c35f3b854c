package trace

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the birth trace's Prometheus histograms. The kubelet
// observes each pod's trace once, when it writes it (the first time the
// pod is Ready), so every step of the whole sequence — API server and
// scheduler included — is measured on one side.
type Metrics struct {
	step  *prometheus.HistogramVec
	total prometheus.Histogram
}

// buckets span 100 µs to 5 min: podkit's steps take microseconds to
// milliseconds; image pulls and readiness probes take seconds.
var buckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// NewMetrics registers the histograms with reg (nil: not registered);
// registering twice with one registry reuses the first collectors.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		step: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "podkit", Name: "pod_birth_step_duration_seconds",
			Help:    "Duration in seconds of each step of a pod's birth (the time since the step before it in the birth trace), by step kind.",
			Buckets: buckets,
		}, []string{"step"}),
		total: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "podkit", Name: "pod_birth_duration_seconds",
			Help:    "Duration in seconds from a pod's first traced step (admitted, or seen by the kubelet) to the pod being Ready.",
			Buckets: buckets,
		}),
	}
	if reg == nil {
		return m, nil
	}
	for i, c := range []prometheus.Collector{m.step, m.total} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
			switch i {
			case 0:
				m.step = are.ExistingCollector.(*prometheus.HistogramVec)
			case 1:
				m.total = are.ExistingCollector.(prometheus.Histogram)
			}
		}
	}
	return m, nil
}

// Observe records every step of t (labelled by kind, so containers do not
// multiply the series) and its total.
func (m *Metrics) Observe(t *Trace) {
	if m == nil {
		return
	}
	rows := t.Rows() // laid out once: Total would sort the steps again
	for _, r := range rows {
		m.step.WithLabelValues(Kind(r.Name)).Observe(r.Took.Seconds())
	}
	m.total.Observe(rowsTotal(rows).Seconds())
}
