package tainteviction_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller/nodelifecycle/tainteviction"
)

var (
	unreachable = corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	notReady    = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	custom      = corev1.Taint{Key: "example.com/maintenance", Value: "yes", Effect: corev1.TaintEffectNoExecute}
)

func tolerate(key string, op corev1.TolerationOperator, value string, effect corev1.TaintEffect, seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: op, Value: value, Effect: effect, TolerationSeconds: seconds}
}

func TestTolerates(t *testing.T) {
	for _, tc := range []struct {
		name string
		tol  corev1.Toleration
		want bool
	}{
		{"exists same key", tolerate(custom.Key, corev1.TolerationOpExists, "", "", nil), true},
		{"equal same value", tolerate(custom.Key, corev1.TolerationOpEqual, "yes", corev1.TaintEffectNoExecute, nil), true},
		{"default operator is equal", tolerate(custom.Key, "", "yes", "", nil), true},
		{"equal other value", tolerate(custom.Key, corev1.TolerationOpEqual, "no", "", nil), false},
		{"other key", tolerate("other", corev1.TolerationOpExists, "", "", nil), false},
		{"other effect", tolerate(custom.Key, corev1.TolerationOpExists, "", corev1.TaintEffectNoSchedule, nil), false},
		{"wildcard", tolerate("", corev1.TolerationOpExists, "", "", nil), true},
		{"empty key needs exists", tolerate("", corev1.TolerationOpEqual, "yes", "", nil), false},
	} {
		assert.Equal(t, tc.want, tainteviction.Tolerates(tc.tol, custom), tc.name)
	}
}

func TestEvictionTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	defaults := []corev1.Toleration{
		tolerate(corev1.TaintNodeNotReady, corev1.TolerationOpExists, "", corev1.TaintEffectNoExecute, ptr.To[int64](300)),
		tolerate(corev1.TaintNodeUnreachable, corev1.TolerationOpExists, "", corev1.TaintEffectNoExecute, ptr.To[int64](300)),
	}
	for _, tc := range []struct {
		name      string
		taints    []corev1.Taint
		starts    []time.Time
		tols      []corev1.Toleration
		wantAt    time.Time
		wantEvict bool
	}{
		{"default tolerations", []corev1.Taint{unreachable}, []time.Time{t0}, defaults, t0.Add(300 * time.Second), true},
		{"not tolerated: at once", []corev1.Taint{custom}, []time.Time{t0}, defaults, time.Time{}, true},
		{"forever", []corev1.Taint{unreachable}, []time.Time{t0},
			[]corev1.Toleration{tolerate(corev1.TaintNodeUnreachable, corev1.TolerationOpExists, "", corev1.TaintEffectNoExecute, nil)}, time.Time{}, false},
		{"first matching toleration counts", []corev1.Taint{unreachable}, []time.Time{t0},
			append(append([]corev1.Toleration{}, defaults...), tolerate("", corev1.TolerationOpExists, "", "", nil)), t0.Add(300 * time.Second), true},
		{"earliest of several taints", []corev1.Taint{unreachable, notReady}, []time.Time{t0, t0.Add(time.Minute)},
			[]corev1.Toleration{
				tolerate(corev1.TaintNodeNotReady, corev1.TolerationOpExists, "", corev1.TaintEffectNoExecute, ptr.To[int64](10)),
				tolerate(corev1.TaintNodeUnreachable, corev1.TolerationOpExists, "", corev1.TaintEffectNoExecute, ptr.To[int64](300)),
			}, t0.Add(70 * time.Second), true},
		{"negative seconds: at once", []corev1.Taint{unreachable}, []time.Time{t0},
			[]corev1.Toleration{tolerate(corev1.TaintNodeUnreachable, corev1.TolerationOpExists, "", "", ptr.To[int64](-5))}, t0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, evict := tainteviction.EvictionTime(tc.taints, tc.starts, tc.tols)
			assert.Equal(t, tc.wantEvict, evict)
			assert.True(t, tc.wantAt.Equal(at), "at %s, want %s", at, tc.wantAt)
		})
	}
}
