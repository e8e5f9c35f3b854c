package plugins

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestTaintTolerationFilter(t *testing.T) {
	const (
		ns = corev1.TaintEffectNoSchedule
		ne = corev1.TaintEffectNoExecute
		pn = corev1.TaintEffectPreferNoSchedule
	)
	tests := []struct {
		name string
		pod  *corev1.Pod
		node *corev1.Node
		want string
	}{
		{"no taints", pod("p").obj(), node("n").obj(), ""},
		{"untolerated NoSchedule", pod("p").obj(), node("n").taint("dedicated", "db", ns).obj(), "node(s) had untolerated taint {dedicated: db}"},
		{"untolerated NoExecute", pod("p").obj(), node("n").taint("k", "v", ne).obj(), "node(s) had untolerated taint {k: v}"},
		{"empty value prints empty", pod("p").obj(), node("n").taint("node-role.kubernetes.io/control-plane", "", ns).obj(), "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"},
		{"PreferNoSchedule does not filter", pod("p").obj(), node("n").taint("k", "v", pn).obj(), ""},
		{"tolerated by Equal", pod("p").toleration("dedicated", "db", corev1.TolerationOpEqual, ns).obj(), node("n").taint("dedicated", "db", ns).obj(), ""},
		{"empty operator means Equal", pod("p").toleration("dedicated", "db", "", ns).obj(), node("n").taint("dedicated", "db", ns).obj(), ""},
		{"Equal with another value", pod("p").toleration("dedicated", "web", corev1.TolerationOpEqual, ns).obj(), node("n").taint("dedicated", "db", ns).obj(), "node(s) had untolerated taint {dedicated: db}"},
		{"Exists without effect tolerates all effects", pod("p").toleration("dedicated", "", corev1.TolerationOpExists, "").obj(), node("n").taint("dedicated", "db", ns).taint("dedicated", "x", ne).obj(), ""},
		{"wrong effect", pod("p").toleration("dedicated", "db", corev1.TolerationOpEqual, ne).obj(), node("n").taint("dedicated", "db", ns).obj(), "node(s) had untolerated taint {dedicated: db}"},
		{"multiple taints, first untolerated reported", pod("p").toleration("a", "1", corev1.TolerationOpEqual, ns).obj(),
			node("n").taint("a", "1", ns).taint("b", "2", ns).taint("c", "3", ne).obj(), "node(s) had untolerated taint {b: 2}"},
		{"multiple taints all tolerated", pod("p").toleration("a", "1", corev1.TolerationOpEqual, ns).toleration("b", "", corev1.TolerationOpExists, "").obj(),
			node("n").taint("a", "1", ns).taint("b", "2", ne).obj(), ""},
		{"Gt operator", pod("p").toleration("level", "5", corev1.TolerationOpGt, ns).obj(), node("n").taint("level", "7", ns).obj(), ""},
		{"Gt operator not satisfied", pod("p").toleration("level", "5", corev1.TolerationOpGt, ns).obj(), node("n").taint("level", "3", ns).obj(), "node(s) had untolerated taint {level: 3}"},
		{"Lt operator", pod("p").toleration("level", "5", corev1.TolerationOpLt, ns).obj(), node("n").taint("level", "3", ns).obj(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runFilter(NewTaintToleration(), tt.pod, "n", []*corev1.Node{tt.node}, nil)
			assert.Equal(t, tt.want, reasonsOf(err))
		})
	}
}

func TestTaintTolerationScore(t *testing.T) {
	const pn = corev1.TaintEffectPreferNoSchedule
	nodes := []*corev1.Node{
		node("clean").obj(),
		node("one").taint("a", "1", pn).obj(),
		node("two").taint("a", "1", pn).taint("b", "2", pn).obj(),
		node("noschedule").taint("a", "1", corev1.TaintEffectNoSchedule).obj(),
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want map[string]int64
	}{
		{"fewer untolerated PreferNoSchedule taints is better", pod("p").obj(),
			map[string]int64{"clean": 100, "one": 50, "two": 0, "noschedule": 100}},
		{"tolerated taints do not count", pod("p").toleration("a", "1", corev1.TolerationOpEqual, pn).obj(),
			map[string]int64{"clean": 100, "one": 100, "two": 0, "noschedule": 100}},
		{"NoSchedule tolerations do not count for scoring", pod("p").toleration("a", "", corev1.TolerationOpExists, corev1.TaintEffectNoSchedule).obj(),
			map[string]int64{"clean": 100, "one": 50, "two": 0, "noschedule": 100}},
		{"everything tolerated", pod("p").toleration("", "", corev1.TolerationOpExists, "").obj(),
			map[string]int64{"clean": 100, "one": 100, "two": 100, "noschedule": 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runScore(NewTaintToleration(), tt.pod, nodes, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
