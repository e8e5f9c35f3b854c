package trace

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)

func at(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }

// recorded is a trace as a podkit cluster writes it for a pod with an init
// container (times in µs after admission).
func recorded() *Trace {
	t := &Trace{}
	for _, s := range []Step{
		{Name: StepAdmitted, At: at(0)}, {Name: StepStored, At: at(310)},
		{Name: StepScheduled, At: at(1900), Detail: "node-1"}, {Name: StepBound, At: at(2500)},
		{Name: StepReady, At: at(98000)},
		{Name: StepSeen, At: at(3100)}, {Name: StepCgroups, At: at(4000)}, {Name: StepVolumes, At: at(4600)},
		{Name: StepSandbox, At: at(9000)}, {Name: StepNetwork, At: at(15000), Detail: "10.244.0.7"},
		{Name: "image:setup", At: at(17000), Detail: "cached"}, {Name: "init:setup", At: at(30000)},
		{Name: "image:web", At: at(31000), Detail: "cached"}, {Name: "container:web", At: at(40000)},
	} {
		t.Add(s.Name, s.At, s.Detail)
	}
	return t
}

var birthOrder = []string{"admitted", "stored", "scheduled", "bound", "seen", "cgroups", "volumes", "sandbox",
	"network", "image:setup", "init:setup", "image:web", "container:web", "ready"}

func names(steps []Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Name)
	}
	return out
}

func TestEncodeDecode(t *testing.T) {
	tr := recorded()
	v := Encode(tr)
	assert.True(t, strings.HasPrefix(v, `{"t0":"2025-03-04T05:06:07.123456789Z","s":[["admitted",0],["stored",310],["scheduled",1900,"node-1"]`), v)
	got, err := Decode(v)
	require.NoError(t, err)
	assert.Equal(t, names(tr.Steps), names(got.Steps))
	for i := range tr.Steps {
		assert.True(t, tr.Steps[i].At.Equal(got.Steps[i].At), tr.Steps[i].Name)
		assert.Equal(t, tr.Steps[i].Detail, got.Steps[i].Detail)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, v := range []string{``, `{}`, `{"t0":"x","s":[]}`, `{"t0":"2025-03-04T05:06:07Z","s":[["a"]]}`,
		`{"t0":"2025-03-04T05:06:07Z","s":[["a","b"]]}`, `{"t0":"2025-03-04T05:06:07Z","s":[["",1]]}`, `[1]`} {
		_, err := Decode(v)
		assert.ErrorIs(t, err, ErrMalformed, v)
	}
}

func TestAppend(t *testing.T) {
	base := Encode(&Trace{Steps: []Step{{Name: StepAdmitted, At: at(0)}}})
	tests := []struct {
		name, v, step, detail string
		want                  string
	}{
		{"fast path", base, StepStored, "", `{"t0":"2025-03-04T05:06:07.123456789Z","s":[["admitted",0],["stored",42]]}`},
		{"detail escaped", base, StepScheduled, `n"1`, `{"t0":"2025-03-04T05:06:07.123456789Z","s":[["admitted",0],["scheduled",42,"n\"1"]]}`},
		{"empty steps", `{"t0":"2025-03-04T05:06:07.123456789Z","s":[]}`, StepStored, "", `{"t0":"2025-03-04T05:06:07.123456789Z","s":[["stored",42]]}`},
		{"present already", base, StepAdmitted, "", base},
		{"other layout", `{ "s":[["admitted",0]], "t0":"2025-03-04T05:06:07.123456789Z" }`, StepStored, "",
			`{"t0":"2025-03-04T05:06:07.123456789Z","s":[["admitted",0],["stored",42]]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Append(tt.v, tt.step, at(42), tt.detail)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := Append("nonsense", StepStored, at(1), "")
	assert.ErrorIs(t, err, ErrMalformed)
}

func TestWithStep(t *testing.T) {
	plain := map[string]string{"a": "b"}
	assert.Equal(t, plain, WithStep(plain, StepScheduled, at(1), "n"), "untraced pods are left alone")
	assert.Nil(t, WithStep(nil, StepScheduled, at(1), "n"))

	traced := map[string]string{"a": "b", Annotation: Encode(&Trace{Steps: []Step{{Name: StepAdmitted, At: at(0)}}})}
	before := traced[Annotation]
	out := WithStep(traced, StepScheduled, at(5), "n")
	assert.Equal(t, before, traced[Annotation], "the map passed in is not modified")
	assert.Equal(t, "b", out["a"])
	tr, ok := FromAnnotations(out)
	require.True(t, ok)
	assert.Equal(t, []string{StepAdmitted, StepScheduled}, names(tr.Steps))
}

func TestRows(t *testing.T) {
	tr := recorded()
	rows := tr.Rows()
	require.Len(t, rows, len(birthOrder))
	var prev time.Duration
	for i, r := range rows {
		assert.Equal(t, birthOrder[i], r.Name)
		assert.GreaterOrEqual(t, r.Took, time.Duration(0), r.Name)
		assert.Equal(t, prev, r.Start, r.Name)
		prev = r.End
	}
	assert.Equal(t, 98*time.Millisecond, tr.Total())

	// A node whose clock is behind the control plane's: its steps keep
	// their place and take no time.
	skew := &Trace{}
	skew.Add(StepAdmitted, at(1000), "")
	skew.Add(StepBound, at(2000), "")
	skew.Add(StepSeen, at(500), "")
	skew.Add(StepReady, at(3000), "")
	rows = skew.Rows()
	assert.Equal(t, []string{StepAdmitted, StepBound, StepSeen, StepReady}, names(skew.Sorted()))
	assert.True(t, rows[2].Skewed)
	assert.Equal(t, time.Duration(0), rows[2].Took)
	assert.Equal(t, time.Millisecond, rows[3].Took)
}

func TestWriteText(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteText(&buf, recorded(), TextOptions{Title: "birth of default/web"}))
	out := buf.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, len(birthOrder)+3, out)
	assert.Equal(t, "birth of default/web", lines[0])
	for i, want := range birthOrder {
		f := strings.Fields(lines[i+2])
		assert.Equal(t, want, f[0], out)
	}
	assert.Contains(t, lines[2+8], "10.244.0.7")
	assert.Regexp(t, `^\s+network\s+15\.000\s+6\.000\s+cni\s`, lines[2+8])
	assert.Regexp(t, `^\s+total\s+98\.000$`, lines[len(lines)-1])
}

func TestWriteSVG(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteSVG(&buf, recorded(), "birth of <web>"))
	d := xml.NewDecoder(&buf)
	rects := 0
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	assert.Equal(t, len(birthOrder)+1, rects, "a background and one bar per step")
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	again, err := NewMetrics(reg)
	require.NoError(t, err, "registering twice reuses the collectors")
	m.Observe(recorded())
	again.Observe(recorded())
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]int{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			got[mf.GetName()]++
			if mf.GetName() == "podkit_pod_birth_duration_seconds" {
				assert.Equal(t, uint64(2), mt.GetHistogram().GetSampleCount())
				assert.InDelta(t, 2*recorded().Total().Seconds(), mt.GetHistogram().GetSampleSum(), 1e-9,
					"the total is the trace's Total")
			}
		}
	}
	assert.Equal(t, map[string]int{"podkit_pod_birth_duration_seconds": 1, "podkit_pod_birth_step_duration_seconds": 13}, got,
		"one series per step kind")
	var nilMetrics *Metrics
	nilMetrics.Observe(recorded())
}
