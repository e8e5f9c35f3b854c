package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// milestone is a start-up step and when podkit up logged it, from the
// process's start.
type milestone struct {
	at   time.Duration
	what string
}

// milestoneMessages are the log messages that mark the steps on the way
// to Ready, in the order a start usually logs them, and what they mean.
var milestoneMessages = []struct{ msg, what string }{
	{"API server built", "API server built (store, PKI, handlers)"},
	{"created the kubernetes service", "API server bootstrapped (fresh)"},
	{"reset the kubernetes service's ports", "API server bootstrapped (resumed)"},
	{"reconciled the RBAC bootstrap policy", "RBAC bootstrap policy reconciled"},
	{"cluster opened: registry and nodes", "registry and node stores opened"},
	{"registered node", "node registered"},
	{"assigned node CIDRs", "PodCIDR assigned"},
	{"scheduler started", "scheduler caches synced"},
	{"supervisor started", "runtime supervisor started"},
	{"node running", "node wired (network, runtime, kubelet)"},
	{"demo image seeded", "demo image pushed"},
	{"pod sources synced", "kubelet pod sources synced"},
}

var logLine = regexp.MustCompile(`^time=(\S+) level=\S+ msg=(?:"((?:[^"\\]|\\.)*)"|(\S*))(.*)`)

// milestones reads podkit up's -v log and returns the first time each
// milestone was logged before ready (every demo image push, though).
func milestones(path string, start time.Time, ready time.Duration) []milestone {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []milestone
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := logLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			continue
		}
		msg := m[2] + m[3]
		for _, mm := range milestoneMessages {
			if msg != mm.msg || (seen[mm.msg] && mm.msg != "demo image seeded") {
				continue
			}
			seen[mm.msg] = true
			what := mm.what
			if i := strings.Index(m[4], "image="); i >= 0 {
				what += " " + strings.Fields(m[4][i:])[0]
			}
			out = append(out, milestone{t.Sub(start), what})
		}
	}
	out = append(out, milestone{ready, "Ready: banner printed, API answering"})
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

func printTrace(ms []milestone) {
	for _, m := range ms {
		fmt.Printf("    %7.0f ms  %s\n", float64(m.at.Microseconds())/1000, m.what)
	}
}
