package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/trace"
)

// recordedTrace is the annotation of a pod born on a podkit cluster (the
// demo's web pod: an init container and a container, images cached).
const recordedTrace = `{"t0":"2026-11-21T10:23:30.412345678Z","s":[["admitted",0],["stored",57],["scheduled",3814,"n1"],["bound",3993],` +
	`["seen",15229],["cgroups",18775],["volumes",28325],["sandbox",115558],["network",137085,"10.244.0.3"],` +
	`["image:setup",289559,"cached"],["init:setup",667568],["image:web",733205,"cached"],["container:web",852855],["ready",958369]]}`

var traceLine = regexp.MustCompile(`^\s+(\S+)\s+(-?\d+\.\d{3})\s+(-?\d+\.\d{3})\s`)

// traceSteps parses printTrace's output: step names, offsets and
// durations in ms.
func traceSteps(t *testing.T, out string) (names []string, at, took []float64) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		m := traceLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		d, err := strconv.ParseFloat(m[3], 64)
		require.NoError(t, err)
		names, at, took = append(names, m[1]), append(at, a), append(took, d)
	}
	return names, at, took
}

func TestPrintTraceRecordedPod(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web",
		Annotations: map[string]string{trace.Annotation: recordedTrace}}, Spec: corev1.PodSpec{NodeName: "n1"}}
	svg := filepath.Join(t.TempDir(), "web.svg")
	var buf bytes.Buffer
	require.NoError(t, printTrace(&buf, pod, svg))
	out := buf.String()
	assert.Contains(t, out, "birth of pod default/web on n1: 958.4 ms from admitted to ready")
	names, at, took := traceSteps(t, out)
	assert.Equal(t, []string{"admitted", "stored", "scheduled", "bound", "seen", "cgroups", "volumes", "sandbox", "network",
		"image:setup", "init:setup", "image:web", "container:web", "ready"}, names)
	for i := range names {
		assert.GreaterOrEqual(t, took[i], 0.0, names[i])
		if i > 0 {
			assert.GreaterOrEqual(t, at[i], at[i-1], names[i])
		}
	}
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), "<svg "))
	assert.Contains(t, string(b), "container:web")
}

func TestPrintTraceErrors(t *testing.T) {
	var buf bytes.Buffer
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "plain"}}
	assert.ErrorContains(t, printTrace(&buf, pod, ""), "has no birth trace")
	pod.Annotations = map[string]string{trace.Annotation: "{"}
	assert.ErrorContains(t, printTrace(&buf, pod, ""), "does not decode")
	pod.Annotations[trace.Annotation] = `{"t0":"2026-11-21T10:23:30Z","s":[["admitted",0],["stored",57]]}`
	buf.Reset()
	require.NoError(t, printTrace(&buf, pod, ""))
	assert.Contains(t, buf.String(), "not Ready yet")
}
