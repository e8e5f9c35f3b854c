package prober

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/sandbox"
)

func TestExecProbe(t *testing.T) {
	timeoutErr := fmt.Errorf("exec in container c1: command timed out after 1s: %w", context.DeadlineExceeded)
	goneErr := fmt.Errorf("exec in container c1: not running: %w", sandbox.ErrNotReady)
	tests := []struct {
		name    string
		kind    Kind
		reply   reply
		result  Result
		message string
		errored bool
		calls   int
	}{
		{name: "exit 0", kind: Liveness, reply: reply{stdout: "fine"}, result: Success, calls: 1},
		{name: "exit 1 with output", kind: Liveness, reply: reply{code: 1, stdout: "out\n", stderr: "err\n"}, result: Failure,
			message: "Liveness probe failed: out\nerr\n", calls: 1},
		{name: "exit 2 silent", kind: Readiness, reply: reply{code: 2}, result: Failure, message: "Readiness probe failed: ", calls: 1},
		{name: "timeout", kind: Startup, reply: reply{err: timeoutErr}, result: Failure,
			message: `Startup probe failed: command "cat /tmp/healthy" timed out`, calls: 1},
		{name: "runtime error retried then errored", kind: Liveness, reply: reply{err: goneErr}, result: Failure, errored: true,
			message: "Liveness probe errored and resulted in unknown state: exec in container c1: not running: not ready", calls: maxProbeRetries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := &fakeExec{script: []reply{tt.reply}}
			m := newTestManager(t, fe)
			p := execProbe("cat", "/tmp/healthy")
			p.TimeoutSeconds = 3
			o := runOnce(t, m, tt.kind, p, nil, "")
			assert.Equal(t, tt.result, o.result)
			assert.Equal(t, tt.errored, o.err != nil)
			assert.Equal(t, tt.message, o.message)
			require.Equal(t, tt.calls, fe.callCount())
			c := fe.lastCall()
			assert.Equal(t, "c1", c.id)
			assert.Equal(t, []string{"cat", "/tmp/healthy"}, c.cmd)
			assert.Equal(t, 3*time.Second, c.timeout)
		})
	}
}

func TestExecProbeOutputIsLimited(t *testing.T) {
	fe := &fakeExec{script: []reply{{code: 1, stdout: strings.Repeat("o", maxOutput-3), stderr: "eeeeee"}}}
	m := newTestManager(t, fe)
	o := runOnce(t, m, Liveness, execProbe("x"), nil, "")
	assert.Equal(t, "Liveness probe failed: "+strings.Repeat("o", maxOutput-3)+"eee", o.message)
}

func TestExecProbeWithoutExecer(t *testing.T) {
	m := newTestManager(t, nil)
	o := runOnce(t, m, Liveness, execProbe("x"), nil, "")
	require.True(t, errors.Is(o.err, ErrNoExecer))
	assert.Equal(t, "Liveness probe errored and resulted in unknown state: no exec runner configured", o.message)
}

func TestExecProbeExpandsEnv(t *testing.T) {
	fe := &fakeExec{}
	m := newTestManager(t, fe)
	c := &corev1.Container{Name: "app", Env: []corev1.EnvVar{
		{Name: "PORT", Value: "8080"},
		{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
	}}
	runOnce(t, m, Readiness, execProbe("check", "--port=$(PORT)", "$(SECRET)"), c, "")
	assert.Equal(t, []string{"check", "--port=8080", "$(SECRET)"}, fe.lastCall().cmd)
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "LONG_NAME": "two", "EMPTY": ""}
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "1"},
		{"x$(A)y$(LONG_NAME)z", "x1ytwoz"},
		{"$(EMPTY)", ""},
		{"$(MISSING)", "$(MISSING)"},
		{"$$(A)", "$(A)"},
		{"$$", "$"},
		{"$", "$"},
		{"a$b", "a$b"},
		{"$(A", "$(A"},
		{"$(A $$", "$(A $"},
		{"$()", "$()"},
		{"$(A)$(A)", "11"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			assert.Equal(t, tt.want, expand(tt.in, vars))
		})
	}
}
