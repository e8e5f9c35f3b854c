package kubelet

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podkit/podkit/sandbox"
)

// Steps of a pod's start, the label of kubelet_pod_start_step_duration_seconds
// (the seeds' timing table).
const (
	StepAdmit      = "admit"
	StepCgroup     = "cgroup"
	StepVolumes    = "volumes"
	StepSandbox    = "sandbox"
	StepImage      = "image"
	StepInit       = "init"
	StepContainers = "containers"
)

// stepSet is a set of the steps above.
type stepSet uint8

// startSteps lists the steps, in the order of stepSet's bits.
var startSteps = [...]string{StepAdmit, StepCgroup, StepVolumes, StepSandbox, StepImage, StepInit, StepContainers}

// add adds a step and says whether it was new (an unknown name always is).
func (s *stepSet) add(name string) bool {
	for i, n := range startSteps {
		if n == name {
			bit := stepSet(1) << i
			if *s&bit != 0 {
				return false
			}
			*s |= bit
			return true
		}
	}
	return true
}

// metrics are the kubelet's Prometheus metrics, named as Kubernetes names
// them where it has one.
type metrics struct {
	podStart     prometheus.Histogram
	podStartSLI  prometheus.Histogram
	podStep      *prometheus.HistogramVec
	podWorker    *prometheus.HistogramVec
	runtime      runtimeGauges
	imagePulls   *prometheus.HistogramVec
	statusWrites *prometheus.CounterVec
}

// startBuckets cover a few milliseconds to minutes (Kubernetes' pod start
// buckets reach 20 minutes; podkit starts pods in milliseconds).
var startBuckets = []float64{0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 1, 2, 3, 5, 10, 20, 30, 45, 60, 120, 300, 600}

// newMetrics builds the metrics and registers them with reg (if any);
// counts reports the runtime cache's running pods and containers by state
// when the gauges are collected.
func newMetrics(reg prometheus.Registerer, counts func() (int, map[sandbox.ContainerState]int)) (*metrics, error) {
	m := &metrics{
		podStart: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "pod_start_duration_seconds",
			Help:    "Duration in seconds from the kubelet seeing a pod for the first time to the pod starting to run.",
			Buckets: startBuckets,
		}),
		podStartSLI: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "pod_start_sli_duration_seconds",
			Help:    "Duration in seconds to start a pod, excluding time to pull images, from the pod's creation timestamp to all its containers running.",
			Buckets: startBuckets,
		}),
		podStep: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "pod_start_step_duration_seconds",
			Help:    "Duration in seconds of each step of a pod's first start (admit, cgroup, volumes, sandbox, image, init, containers).",
			Buckets: startBuckets,
		}, []string{"step"}),
		podWorker: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "pod_worker_duration_seconds",
			Help:    "Duration in seconds to sync a single pod, by operation (create, update, sync, terminate).",
			Buckets: startBuckets,
		}, []string{"operation"}),
		runtime: runtimeGauges{counts: counts,
			pods: prometheus.NewDesc("kubelet_running_pods", "Number of pods that have a running container.", nil, nil),
			containers: prometheus.NewDesc("kubelet_running_containers",
				"Number of containers currently known to the runtime, by state.", []string{"container_state"}, nil),
		},
		imagePulls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "image_pull_duration_seconds",
			Help:    "Duration in seconds to pull an image, by outcome.",
			Buckets: startBuckets,
		}, []string{"outcome"}),
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "pod_status_writes_total",
			Help: "Pod status writes to the API server, by result.",
		}, []string{"result"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.podStart, m.podStartSLI, m.podStep, m.podWorker, m.runtime, m.imagePulls, m.statusWrites} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
		}
	}
	return m, nil
}

// containerStateLabel names a runtime state as Kubernetes' gauge does.
func containerStateLabel(s sandbox.ContainerState) string {
	switch s {
	case sandbox.ContainerStateCreated:
		return "created"
	case sandbox.ContainerStateRunning:
		return "running"
	case sandbox.ContainerStateExited:
		return "exited"
	}
	return "unknown"
}

// runtimeGauges are kubelet_running_pods and kubelet_running_containers,
// counted from the runtime cache when collected: a scrape costs one pass
// over the node's pods, and a container event costs nothing (counting on
// every event would cost a node with a hundred pods a hundred pods' worth
// of work per event).
type runtimeGauges struct {
	counts           func() (pods int, byState map[sandbox.ContainerState]int)
	pods, containers *prometheus.Desc
}

var runtimeStates = []sandbox.ContainerState{sandbox.ContainerStateCreated, sandbox.ContainerStateRunning,
	sandbox.ContainerStateExited, sandbox.ContainerStateUnknown}

func (g runtimeGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.pods
	ch <- g.containers
}

func (g runtimeGauges) Collect(ch chan<- prometheus.Metric) {
	pods, byState := g.counts()
	ch <- prometheus.MustNewConstMetric(g.pods, prometheus.GaugeValue, float64(pods))
	for _, s := range runtimeStates {
		ch <- prometheus.MustNewConstMetric(g.containers, prometheus.GaugeValue, float64(byState[s]), containerStateLabel(s))
	}
}

// runtimeCounts counts the runtime cache's running pods and containers by
// state (nothing before the cache exists).
func (k *Kubelet) runtimeCounts() (int, map[sandbox.ContainerState]int) {
	if k.cache == nil {
		return 0, nil
	}
	return k.cache.counts()
}
