package trace

import (
	"sort"
	"time"
)

// Row is one step of the waterfall: the step's bar runs from Start to End
// (offsets from the first step); Took is End−Start.
type Row struct {
	Step
	Start, End, Took time.Duration
	// Skewed: the step's clock put it before the step it follows (another
	// machine's clock); its bar has zero length.
	Skewed bool
}

// phase orders the components: the API server's and the scheduler's
// steps, then the node's by time, then ready.
func phase(name string) int {
	switch name {
	case StepAdmitted:
		return 0
	case StepStored:
		return 1
	case StepScheduled:
		return 2
	case StepBound:
		return 3
	case StepReady:
		return 5
	}
	return 4
}

// nodeOrder breaks ties between node steps at the same instant.
var nodeOrder = map[string]int{StepSeen: 0, StepCgroups: 1, StepVolumes: 2, StepSandbox: 3, StepNetwork: 4,
	StepImage: 5, StepInit: 6, StepContainer: 7}

// Sorted returns the steps in birth order: by component (API server,
// scheduler, node, ready), the node's by time.
func (t *Trace) Sorted() []Step {
	out := append([]Step(nil), t.Steps...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if pa, pb := phase(a.Name), phase(b.Name); pa != pb {
			return pa < pb
		}
		if !a.At.Equal(b.At) {
			return a.At.Before(b.At)
		}
		return nodeOrder[Kind(a.Name)] < nodeOrder[Kind(b.Name)]
	})
	return out
}

// Rows lays the trace out as a waterfall: each step's bar starts where the
// previous one ended, so durations are never negative and add up to the
// total.
func (t *Trace) Rows() []Row {
	steps := t.Sorted()
	rows := make([]Row, 0, len(steps))
	if len(steps) == 0 {
		return rows
	}
	t0 := steps[0].At
	var end time.Duration
	for _, s := range steps {
		r := Row{Step: s, Start: end}
		at := s.At.Sub(t0)
		if at < end {
			r.Skewed = true
			at = end
		}
		r.End, r.Took = at, at-end
		end = at
		rows = append(rows, r)
	}
	return rows
}

// Total is the time from the first step to the last in birth order.
func (t *Trace) Total() time.Duration { return rowsTotal(t.Rows()) }

// rowsTotal is the end of the last of rows (0 without rows).
func rowsTotal(rows []Row) time.Duration {
	if len(rows) == 0 {
		return 0
	}
	return rows[len(rows)-1].End
}
