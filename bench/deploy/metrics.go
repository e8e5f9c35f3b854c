package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// counters are a scrape of the API server's counters of interest, keyed by
// a readable series name ("POST pods", "PATCH pods/status", "watch Pod").
type counters map[string]float64

// scrapeCounters reads /metrics through the client and keeps
// apiserver_request_total summed by verb, resource and subresource (over
// codes and scopes) and apiserver_watch_events_total by kind.
func scrapeCounters(ctx context.Context, cl kubernetes.Interface) (counters, error) {
	rc, err := cl.CoreV1().RESTClient().Get().AbsPath("/metrics").Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape /metrics: %w", err)
	}
	defer rc.Close()
	return parseCounters(rc)
}

func parseCounters(r io.Reader) (counters, error) {
	out := counters{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var metric string
		switch {
		case strings.HasPrefix(line, "apiserver_request_total{"):
			metric = "req"
		case strings.HasPrefix(line, "apiserver_watch_events_total{"):
			metric = "watch"
		default:
			continue
		}
		open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
		if open < 0 || end < open {
			continue
		}
		labels := parseLabels(line[open+1 : end])
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			continue
		}
		var key string
		if metric == "req" {
			res := labels["resource"]
			if s := labels["subresource"]; s != "" {
				res += "/" + s
			}
			key = labels["verb"] + " " + res
		} else {
			key = "watch-event " + labels["kind"]
		}
		out[key] += v
	}
	return out, sc.Err()
}

// parseLabels splits `a="x",b="y"` (label values here hold no quotes).
func parseLabels(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			m[k] = strings.Trim(v, `"`)
		}
	}
	return m
}

// printDelta prints after-before per series, per pod, largest first.
func printDelta(w io.Writer, before, after counters, pods int) {
	type row struct {
		key string
		n   float64
	}
	var rows []row
	var writes float64
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			rows = append(rows, row{k, d})
			if verb, _, _ := strings.Cut(k, " "); verb == "create" || verb == "update" || verb == "patch" || verb == "delete" {
				writes += d
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].n > rows[j].n })
	fmt.Fprintf(w, "API requests during the run (per pod of %d); writes %.0f = %.2f/pod:\n", pods, writes, writes/float64(pods))
	for _, r := range rows {
		fmt.Fprintf(w, "  %-40s %9.0f  %6.2f/pod\n", r.key, r.n, r.n/float64(pods))
	}
}

// printEvents prints the events of the default namespace by source and
// reason, per pod.
func printEvents(ctx context.Context, cl kubernetes.Interface, w io.Writer, pods int) error {
	evs, err := cl.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing events: %w", err)
	}
	by := map[string][2]int{} // objects, count
	for _, e := range evs.Items {
		if e.Count > 1 && e.Type == "Normal" && e.InvolvedObject.Kind == "Pod" {
			fmt.Fprintf(w, "  repeated: %s %s %s ×%d (%s → %s): %s\n", e.Source.Component, e.InvolvedObject.Name, e.Reason, e.Count,
				e.FirstTimestamp.Format(time.RFC3339Nano), e.LastTimestamp.Format(time.RFC3339Nano), e.Message)
		}
		k := e.Source.Component + " " + e.InvolvedObject.Kind + " " + e.Reason
		if e.ReportingController != "" && e.Source.Component == "" {
			k = e.ReportingController + " " + e.InvolvedObject.Kind + " " + e.Reason
		}
		v := by[k]
		v[0]++
		v[1] += int(max(e.Count, 1))
		by[k] = v
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "events in namespace default (objects, occurrences):\n")
	for _, k := range keys {
		fmt.Fprintf(w, "  %-50s %7d %7d  %5.2f/pod\n", k, by[k][0], by[k][1], float64(by[k][0])/float64(pods))
	}
	return nil
}

// writeHeapProfile writes the heap profile into path ("" = none); its
// alloc_space sample counts what was allocated since the process started.
func writeHeapProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// startCPUProfile starts a CPU profile into path ("" = none) and returns
// its stop function, which may be called more than once.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { pprof.StopCPUProfile(); f.Close() }) }, nil
}
