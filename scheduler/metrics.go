package scheduler

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Attempt results, the "result" label of the attempt metrics.
const (
	ResultScheduled     = "scheduled"
	ResultUnschedulable = "unschedulable"
	ResultError         = "error"
)

// metrics are the scheduler's Prometheus metrics, named as kube-scheduler's.
type metrics struct {
	attempts        *prometheus.CounterVec
	attemptDuration *prometheus.HistogramVec
	pending         *prometheus.GaugeVec
	podAttempts     prometheus.Histogram
	// cached gauge children, set on every queue change
	active, backoff, unschedulable, gated prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "scheduler", Name: "schedule_attempts_total",
			Help: "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.",
		}, []string{"result", "profile"}),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "scheduler", Name: "scheduling_attempt_duration_seconds",
			Help:    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"result", "profile"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "scheduler", Name: "pending_pods",
			Help: "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated.",
		}, []string{"queue"}),
		podAttempts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "scheduler", Name: "pod_scheduling_attempts",
			Help:    "Number of attempts to successfully schedule a pod.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 5),
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.attempts, m.attemptDuration, m.pending, m.podAttempts} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("registering scheduler metrics: %w", err)
			}
		}
	}
	m.active = m.pending.WithLabelValues("active")
	m.backoff = m.pending.WithLabelValues("backoff")
	m.unschedulable = m.pending.WithLabelValues("unschedulable")
	m.gated = m.pending.WithLabelValues("gated")
	return m, nil
}

func (m *metrics) observeAttempt(result, profile string, d time.Duration) {
	m.attempts.WithLabelValues(result, profile).Inc()
	m.attemptDuration.WithLabelValues(result, profile).Observe(d.Seconds())
}

func (m *metrics) queueSizes(active, backoff, unschedulable, gated int) {
	m.active.Set(float64(active))
	m.backoff.Set(float64(backoff))
	m.unschedulable.Set(float64(unschedulable))
	m.gated.Set(float64(gated))
}
