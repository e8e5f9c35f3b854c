package apiserver

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the Prometheus series an operator looks at, named as
// kube-apiserver names them.
type metrics struct {
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	watchers  *prometheus.GaugeVec
	watchEvts *prometheus.CounterVec
	inflight  *prometheus.GaugeVec
	rejected  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	labels := []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, group, version, resource, scope, component, and HTTP response code.",
		}, append(labels, "code")),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, group, version, resource, subresource, scope and component.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, labels),
		watchers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_registered_watchers",
			Help: "Number of currently registered watchers for a given resource.",
		}, []string{"group", "version", "kind"}),
		watchEvts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_events_total",
			Help: "Number of events sent in watch clients.",
		}, []string{"group", "version", "kind"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_current_inflight_requests",
			Help: "Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
		}, []string{"request_kind"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_dropped_requests_total",
			Help: "Number of requests dropped with 'Try again later' response.",
		}, []string{"request_kind"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.watchers, m.watchEvts, m.inflight, m.rejected} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (s *Server) metricsHandler() http.Handler {
	if s.gatherer == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{})
}

// observe records one finished resource request.
func (m *metrics) observe(info requestInfo, scope string, code int, seconds float64) {
	l := [...]string{info.Verb, info.GroupVersion.Group, info.GroupVersion.Version, info.Resource, info.Subresource, scope, "apiserver", codeLabel(code)}
	m.latency.WithLabelValues(l[:7]...).Observe(seconds)
	m.requests.WithLabelValues(l[:]...).Inc()
}

// codeLabel is strconv.Itoa(code), without allocating for the codes
// most responses carry.
func codeLabel(code int) string {
	switch code {
	case http.StatusOK:
		return "200"
	case http.StatusCreated:
		return "201"
	case http.StatusNotFound:
		return "404"
	case http.StatusConflict:
		return "409"
	}
	return strconv.Itoa(code)
}
