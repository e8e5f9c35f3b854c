package admission

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics records admission latencies under the names Kubernetes uses. One
// Metrics may be shared by several chains.
type Metrics struct {
	plugin *prometheus.HistogramVec
	step   *prometheus.HistogramVec
}

// NewMetrics creates the admission histograms and registers them with reg:
//
//	apiserver_admission_controller_admission_duration_seconds{name,type,operation,rejected}
//	apiserver_admission_step_admission_duration_seconds{type,operation,rejected}
//
// where type is "admit" or "validate".
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	buckets := []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5}
	m := &Metrics{
		plugin: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "controller_admission_duration_seconds",
			Help:    "Admission controller latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
			Buckets: buckets,
		}, []string{"name", "type", "operation", "rejected"}),
		step: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "step_admission_duration_seconds",
			Help:    "Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).",
			Buckets: buckets,
		}, []string{"type", "operation", "rejected"}),
	}
	for _, c := range []prometheus.Collector{m.plugin, m.step} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering admission metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) observePlugin(name, typ string, op Operation, rejected bool, d time.Duration) {
	if m == nil {
		return
	}
	m.plugin.WithLabelValues(name, typ, string(op), strconv.FormatBool(rejected)).Observe(d.Seconds())
}

func (m *Metrics) observeStep(typ string, op Operation, rejected bool, d time.Duration) {
	if m == nil {
		return
	}
	m.step.WithLabelValues(typ, string(op), strconv.FormatBool(rejected)).Observe(d.Seconds())
}
