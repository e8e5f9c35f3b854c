package admission

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testPlugin records calls and can fail, panic or restrict operations.
type testPlugin struct {
	name  string
	ops   []Operation
	err   error
	panic any
	calls *[]string
}

func (p *testPlugin) record(kind string) error {
	*p.calls = append(*p.calls, kind+":"+p.name)
	if p.panic != nil {
		panic(p.panic)
	}
	return p.err
}

func (p *testPlugin) Admit(context.Context, *Attributes) error    { return p.record("admit") }
func (p *testPlugin) Validate(context.Context, *Attributes) error { return p.record("validate") }

// handlerPlugin adds Handles and Name.
type handlerPlugin struct{ *testPlugin }

func (h handlerPlugin) Name() string { return h.name }
func (h handlerPlugin) Handles(op Operation) bool {
	for _, o := range h.ops {
		if o == op {
			return true
		}
	}
	return false
}

func TestChainRunsInOrderAndSkipsUnhandled(t *testing.T) {
	var calls []string
	a := &testPlugin{name: "a", calls: &calls}
	b := handlerPlugin{&testPlugin{name: "b", ops: []Operation{Delete}, calls: &calls}}
	c := handlerPlugin{&testPlugin{name: "c", ops: []Operation{Create, Update}, calls: &calls}}
	chain, err := NewChain([]Admitter{a, b, c}, []Validator{c, b, a})
	require.NoError(t, err)

	req := createPod("ns", newPod("p"))
	require.NoError(t, chain.Admit(context.Background(), req))
	require.NoError(t, chain.Validate(context.Background(), req))
	assert.Equal(t, []string{"admit:a", "admit:c", "validate:c", "validate:a"}, calls)
}

func TestChainStopsAtFirstError(t *testing.T) {
	var calls []string
	denied := apierrors.NewForbidden(podsGR, "p", errors.New("nope"))
	chain, err := NewChain([]Admitter{
		&testPlugin{name: "a", calls: &calls},
		&testPlugin{name: "b", err: denied, calls: &calls},
		&testPlugin{name: "c", calls: &calls},
	}, nil)
	require.NoError(t, err)
	err = chain.Admit(context.Background(), createPod("ns", newPod("p")))
	assert.Same(t, denied, err, "API errors pass through unchanged")
	assert.Equal(t, []string{"admit:a", "admit:b"}, calls)
}

var errSidecarsBanned = errors.New("sidecars are banned here")

func TestChainWrapsPluginErrors(t *testing.T) {
	wrappedStatus := errors.Join(errors.New("context"), apierrors.NewConflict(podsGR, "p", errors.New("try again")))
	tests := []struct {
		name     string
		plugin   Admitter
		ctx      func() context.Context
		req      *Attributes
		code     int32
		message  string
		sentinel error
	}{
		{
			name:     "plain error from a named plugin is Forbidden",
			plugin:   handlerPlugin{&testPlugin{name: "sidecar-guard", ops: []Operation{Create}, err: errSidecarsBanned}},
			req:      createPod("ns", newPod("web")),
			code:     http.StatusForbidden,
			message:  `pods "web" is forbidden: admission plugin "sidecar-guard" denied the request: sidecars are banned here`,
			sentinel: errSidecarsBanned,
		},
		{
			name:     "unnamed plugins are named by position",
			plugin:   &testPlugin{err: errSidecarsBanned},
			req:      createPod("ns", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-"}}),
			code:     http.StatusForbidden,
			message:  `pods "web-" is forbidden: admission plugin "mutating#0" denied the request: sidecars are banned here`,
			sentinel: errSidecarsBanned,
		},
		{
			name:     "deadline is an internal error",
			plugin:   &testPlugin{err: context.DeadlineExceeded},
			req:      createPod("ns", newPod("web")),
			code:     http.StatusInternalServerError,
			message:  `Internal error occurred: admission plugin "mutating#0" failed: context deadline exceeded`,
			sentinel: context.DeadlineExceeded,
		},
		{
			name:   "cancelled context stops before the plugin",
			plugin: &testPlugin{err: errors.New("must not run")},
			ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			},
			req:      createPod("ns", newPod("web")),
			code:     http.StatusInternalServerError,
			message:  `Internal error occurred: admission plugin "mutating#0" failed: context canceled`,
			sentinel: context.Canceled,
		},
		{
			name:     "panic is an internal error",
			plugin:   &testPlugin{panic: "boom"},
			req:      createPod("ns", newPod("web")),
			code:     http.StatusInternalServerError,
			message:  `Internal error occurred: admission plugin "mutating#0" panicked: boom`,
			sentinel: ErrPluginPanic,
		},
		{
			name:     "wrapped API status passes through",
			plugin:   &testPlugin{err: wrappedStatus},
			req:      createPod("ns", newPod("web")),
			code:     http.StatusConflict,
			sentinel: wrappedStatus,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tp, ok := tt.plugin.(*testPlugin); ok {
				tp.calls = new([]string)
			}
			if hp, ok := tt.plugin.(handlerPlugin); ok {
				hp.calls = new([]string)
			}
			chain, err := NewChain([]Admitter{tt.plugin}, nil)
			require.NoError(t, err)
			ctx := context.Background()
			if tt.ctx != nil {
				ctx = tt.ctx()
			}
			err = chain.Admit(ctx, tt.req)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.sentinel)
			assert.Equal(t, tt.code, statusCode(err))
			if tt.message != "" {
				assert.Equal(t, tt.message, err.Error())
				assert.Equal(t, tt.message, messageOf(err))
			}
		})
	}
}

func statusCode(err error) int32 {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Code
	}
	return 0
}

func messageOf(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Message
	}
	return ""
}

func TestChainPluginErrorIsForbidden(t *testing.T) {
	chain, err := NewChain(nil, []Validator{ValidateFunc(func(context.Context, *Attributes) error {
		return errSidecarsBanned
	})})
	require.NoError(t, err)
	err = chain.Validate(context.Background(), createPod("ns", newPod("web")))
	assert.True(t, apierrors.IsForbidden(err))
	var pe *PluginError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "validating#0", pe.Plugin)
	assert.Equal(t, metav1.StatusReasonForbidden, pe.Status().Reason)
}

func TestNewChainRejectsBadInput(t *testing.T) {
	_, err := NewChain([]Admitter{nil}, nil)
	assert.Error(t, err)
	_, err = NewChain(nil, []Validator{nil})
	assert.Error(t, err)
	_, err = NewChain(nil, nil, WithLogger(nil))
	assert.Error(t, err)
	_, err = NewChain(nil, nil, WithMetrics(nil))
	assert.Error(t, err)
	_, err = NewChain(nil, nil, WithClock(nil))
	assert.Error(t, err)

	chain, err := NewChain(nil, nil)
	require.NoError(t, err)
	assert.Error(t, chain.Admit(context.Background(), nil))
	assert.NoError(t, chain.Validate(context.Background(), createPod("ns", newPod("p"))), "an empty chain admits")
}

func TestChainMetricsAndLogs(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	_, err = NewMetrics(reg)
	assert.Error(t, err, "registering twice fails")

	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	now := time.Unix(0, 0)
	clock := func() time.Time { now = now.Add(10 * time.Millisecond); return now }
	var calls []string
	chain, err := NewChain(
		[]Admitter{handlerPlugin{&testPlugin{name: "ok", ops: []Operation{Create}, calls: &calls}}},
		[]Validator{handlerPlugin{&testPlugin{name: "deny", ops: []Operation{Create}, err: errSidecarsBanned, calls: &calls}}},
		WithMetrics(m), WithLogger(logger), WithClock(clock))
	require.NoError(t, err)
	req := createPod("ns", newPod("web"))
	require.NoError(t, chain.Admit(context.Background(), req))
	require.Error(t, chain.Validate(context.Background(), req))

	families, err := reg.Gather()
	require.NoError(t, err)
	counts := map[string]uint64{}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			key := f.GetName()
			for _, l := range metric.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			counts[key] = metric.GetHistogram().GetSampleCount()
		}
	}
	assert.Equal(t, map[string]uint64{
		"apiserver_admission_controller_admission_duration_seconds,name=ok,operation=CREATE,rejected=false,type=admit":     1,
		"apiserver_admission_controller_admission_duration_seconds,name=deny,operation=CREATE,rejected=true,type=validate": 1,
		"apiserver_admission_step_admission_duration_seconds,operation=CREATE,rejected=false,type=admit":                   1,
		"apiserver_admission_step_admission_duration_seconds,operation=CREATE,rejected=true,type=validate":                 1,
	}, counts)
	assert.Contains(t, logs.String(), "plugin=deny")
	assert.Contains(t, logs.String(), "admission rejected request")
}

func TestChainsNest(t *testing.T) {
	var calls []string
	inner, err := NewChain([]Admitter{&testPlugin{name: "inner", calls: &calls}}, nil)
	require.NoError(t, err)
	outer, err := NewChain([]Admitter{inner, &testPlugin{name: "outer", calls: &calls}}, nil)
	require.NoError(t, err)
	require.NoError(t, outer.Admit(context.Background(), createPod("ns", newPod("p"))))
	assert.Equal(t, []string{"admit:inner", "admit:outer"}, calls)
}

// finishPlugin records Finish calls.
type finishPlugin struct {
	testPlugin
	finished []error
}

func (f *finishPlugin) Finish(_ context.Context, _ *Attributes, err error) {
	f.finished = append(f.finished, err)
}

func TestChainFinish(t *testing.T) {
	var calls []string
	both := &finishPlugin{testPlugin: testPlugin{name: "both", calls: &calls}}
	other := &finishPlugin{testPlugin: testPlugin{name: "other", calls: &calls}}
	inner, err := NewChain(nil, []Validator{other})
	require.NoError(t, err)
	chain, err := NewChain([]Admitter{both, &testPlugin{name: "plain", calls: &calls}}, []Validator{both, inner})
	require.NoError(t, err)

	writeErr := errors.New("conflict")
	chain.Finish(context.Background(), createPod("ns", newPod("p")), writeErr)
	chain.Finish(context.Background(), nil, nil)
	assert.Equal(t, []error{writeErr}, both.finished, "once, though listed twice")
	assert.Equal(t, []error{writeErr}, other.finished, "nested chains forward Finish")
}
