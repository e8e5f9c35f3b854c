package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// hist is one histogram series: its count, sum and cumulative buckets.
type hist struct {
	count  uint64
	sum    float64
	bounds []float64
	cum    []uint64
}

// snapshot is every kubelet histogram series, keyed "name{label=value}".
type snapshot map[string]hist

// gatherer returns the node's metric families (the in-process registry, or
// the node process's /metrics).
type gatherer func() ([]*dto.MetricFamily, error)

// histograms keeps the kubelet's histograms of families.
func histograms(fams []*dto.MetricFamily) snapshot {
	s := snapshot{}
	for _, f := range fams {
		if f.GetType() != dto.MetricType_HISTOGRAM || !strings.HasPrefix(f.GetName(), "kubelet_") {
			continue
		}
		for _, m := range f.GetMetric() {
			key := f.GetName()
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			h := m.GetHistogram()
			e := hist{count: h.GetSampleCount(), sum: h.GetSampleSum()}
			for _, b := range h.GetBucket() {
				e.bounds = append(e.bounds, b.GetUpperBound())
				e.cum = append(e.cum, b.GetCumulativeCount())
			}
			s[key] = e
		}
	}
	return s
}

// since is s minus an earlier snapshot: the observations in between.
func (s snapshot) since(old snapshot) snapshot {
	out := snapshot{}
	for k, h := range s {
		o := old[k]
		d := hist{count: h.count - o.count, sum: h.sum - o.sum, bounds: h.bounds}
		for i, c := range h.cum {
			var oc uint64
			if i < len(o.cum) {
				oc = o.cum[i]
			}
			d.cum = append(d.cum, c-oc)
		}
		if d.count > 0 {
			out[k] = d
		}
	}
	return out
}

// quantile is the upper bound of the bucket holding quantile q.
func (h hist) quantile(q float64) float64 {
	want := uint64(math.Ceil(q * float64(h.count)))
	for i, c := range h.cum {
		if c >= want {
			return h.bounds[i]
		}
	}
	return math.Inf(1)
}

func (h hist) mean() time.Duration {
	if h.count == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.count) * float64(time.Second))
}

// phaseRows are the kubelet's per-phase histograms shown in the report, in
// the order of the birth sequence.
var phaseRows = []struct{ key, label string }{
	{`kubelet_pod_start_step_duration_seconds{step=admit}`, "kubelet: admit (first sync → admitted)"},
	{`kubelet_pod_start_step_duration_seconds{step=cgroup}`, "kubelet: pod cgroup"},
	{`kubelet_pod_start_step_duration_seconds{step=volumes}`, "kubelet: volumes"},
	{`kubelet_pod_start_step_duration_seconds{step=sandbox}`, "runtime: sandbox (namespaces, CNI bridge + IPAM)"},
	{`kubelet_pod_start_step_duration_seconds{step=image}`, "image: resolve (cached)"},
	{`kubelet_pod_start_step_duration_seconds{step=containers}`, "runtime: containers (snapshot, create, start)"},
	{`kubelet_pod_start_duration_seconds`, "kubelet: first seen → Running reported"},
	{`kubelet_pod_worker_duration_seconds{operation=create}`, "kubelet: first sync (whole)"},
	{`kubelet_pod_status_write_duration_seconds`, "kubelet: status queued → written"},
}

// writePhases prints the kubelet's per-phase table of snap.
func writePhases(w io.Writer, snap snapshot) {
	fmt.Fprintf(w, "| kubelet phase | n | mean | ~p50 | ~p99 |\n|---|---|---|---|---|\n")
	for _, r := range phaseRows {
		h, ok := snap[r.key]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %s | ≤ %s | ≤ %s |\n", r.label, h.count, round(h.mean()), bound(h.quantile(0.5)), bound(h.quantile(0.99)))
	}
}

func bound(s float64) string {
	if math.IsInf(s, 1) {
		return "+Inf"
	}
	return round(time.Duration(s * float64(time.Second))).String()
}

// scrape reads a Prometheus text endpoint.
func scrape(url string) ([]*dto.MetricFamily, error) {
	resp, err := http.Get(url) //nolint:gosec // the benchmark's own node process on loopback
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	m, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*dto.MetricFamily, 0, len(m))
	for _, n := range names {
		out = append(out, m[n])
	}
	return out, nil
}
