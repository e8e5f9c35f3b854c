package admission

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/trace"
)

// steppingClock returns t0, t0+1ms, t0+2ms, ...
func steppingClock() func() time.Time {
	t := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

func stepNames(t *testing.T, annotations map[string]string) []string {
	t.Helper()
	tr, ok := trace.FromAnnotations(annotations)
	require.True(t, ok, "a birth trace in %v", annotations)
	var out []string
	for _, s := range tr.Steps {
		out = append(out, s.Name)
	}
	return out
}

func TestBirthTraceThroughCreateAndBind(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore()
	b := NewBirthTrace(steppingClock(), st)
	inner, err := NewChain([]Admitter{AdmitFunc(func(_ context.Context, a *Attributes) error {
		if p, ok := a.Object.(*corev1.Pod); ok && a.Subresource == "" {
			p.Labels = map[string]string{"mutated": "before the trace"}
		}
		return nil
	})}, nil)
	require.NoError(t, err)
	chain, traced, err := InstallBirthTrace(b, inner, st)
	require.NoError(t, err)

	// A copied manifest's old trace is replaced.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web",
		Annotations: map[string]string{trace.Annotation: `{"t0":"2020-01-01T00:00:00Z","s":[["ready",5]]}`, "keep": "me"}}}
	a := &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Namespace: "default", Name: "web", Object: pod}
	require.NoError(t, chain.Admit(ctx, a))
	require.NoError(t, chain.Validate(ctx, a))
	assert.Equal(t, "before the trace", pod.Labels["mutated"])
	assert.Equal(t, []string{trace.StepAdmitted}, stepNames(t, pod.Annotations))
	key := storage.Key(podsGR, "default", "web")
	out, err := traced.Create(ctx, key, pod)
	require.NoError(t, err)
	assert.Equal(t, []string{trace.StepAdmitted, trace.StepStored}, stepNames(t, out.(*corev1.Pod).Annotations))
	assert.Equal(t, "me", out.(*corev1.Pod).Annotations["keep"])

	// A Binding carrying the trace (podkit's scheduler) gets "bound".
	withTrace := trace.WithStep(out.(*corev1.Pod).Annotations, trace.StepScheduled, time.Now(), "n1")
	bind := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{trace.Annotation: withTrace[trace.Annotation]}}}
	ba := &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Subresource: "binding",
		Namespace: "default", Name: "web", Object: bind}
	require.NoError(t, chain.Admit(ctx, ba))
	assert.Equal(t, []string{trace.StepAdmitted, trace.StepStored, trace.StepScheduled, trace.StepBound}, stepNames(t, bind.Annotations))

	// A Binding without it (another scheduler) gets the stored trace.
	bare := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	ba.Object = bare
	require.NoError(t, chain.Admit(ctx, ba))
	assert.Equal(t, []string{trace.StepAdmitted, trace.StepStored, trace.StepBound}, stepNames(t, bare.Annotations))

	// Other objects and operations are untouched.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	require.NoError(t, chain.Admit(ctx, &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), Object: cm}))
	assert.Nil(t, cm.Annotations)
	upd := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	require.NoError(t, chain.Admit(ctx, &Attributes{Operation: Update, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Object: upd}))
	assert.Nil(t, upd.Annotations)
	untraced := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "plain"}}
	_, err = traced.Create(ctx, storage.Key(podsGR, "default", "plain"), untraced)
	require.NoError(t, err)
	assert.Nil(t, untraced.Annotations, "the store stamps only traced pods")
}

func TestInstallBirthTraceWithoutChain(t *testing.T) {
	st := newFakeStore()
	chain, _, err := InstallBirthTrace(NewBirthTrace(nil, nil), nil, st)
	require.NoError(t, err)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	require.NoError(t, chain.Admit(context.Background(), &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Object: pod}))
	assert.Contains(t, pod.Annotations, trace.Annotation)
	_, _, err = InstallBirthTrace(nil, nil, st)
	assert.Error(t, err)
}
