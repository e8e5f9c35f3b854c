package kubelet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/trace"
)

// TestBirthTraceWrittenOnceReady: a pod whose control-plane steps are in
// its annotation gets the kubelet's steps added, in birth order, through
// the status write after it is Ready; a pod without a trace gets none.
func TestBirthTraceWrittenOnceReady(t *testing.T) {
	e := newEnv(t)
	e.start()
	t0 := time.Now().Add(-time.Second)
	cp := &trace.Trace{}
	cp.Add(trace.StepAdmitted, t0, "")
	cp.Add(trace.StepStored, t0.Add(time.Millisecond), "")
	cp.Add(trace.StepScheduled, t0.Add(2*time.Millisecond), e.cfg.NodeName)
	cp.Add(trace.StepBound, t0.Add(3*time.Millisecond), "")
	p := e.initPod("web", corev1.RestartPolicyAlways, []string{"exit", "0"})
	p.Annotations = map[string]string{trace.Annotation: trace.Encode(cp)}
	e.create(p)
	e.create(e.pod("plain", []string{"sleep", "inf"}))

	p = e.waitPod("web", "a complete birth trace", func(p *corev1.Pod) bool {
		t, ok := trace.FromAnnotations(p.Annotations)
		return ok && t.Has(trace.StepReady)
	})
	// Later status writes (from copies without the node's steps) keep them.
	p = e.waitPod("web", "Ready", func(p *corev1.Pod) bool { return p.Status.PodIP != "" && ready(p) })
	tr, ok := trace.FromAnnotations(e.get("web").Annotations)
	require.True(t, ok)
	var names []string
	for _, s := range tr.Sorted() {
		names = append(names, s.Name)
	}
	require.Len(t, names, 14, names)
	assert.Equal(t, []string{"admitted", "stored", "scheduled", "bound", "seen", "cgroups", "volumes", "sandbox", "network", "image:init1"}, names[:10])
	// Steps at the same instant of the test's fake clock may come in
	// either order; by time, the init container runs before the app's image.
	assert.ElementsMatch(t, []string{"init:init1", "image:app"}, names[10:12])
	assert.Equal(t, []string{"container:app", "ready"}, names[12:])
	network, _ := tr.Get(trace.StepNetwork)
	assert.Equal(t, p.Status.PodIP, network.Detail)
	img, _ := tr.Get("image:app")
	assert.Contains(t, []string{"pulled", "cached"}, img.Detail)
	for _, r := range tr.Rows() {
		assert.GreaterOrEqual(t, r.Took, time.Duration(0), r.Name)
	}

	plain := e.waitPod("plain", "Ready", ready)
	assert.NotContains(t, plain.Annotations, trace.Annotation)
}
