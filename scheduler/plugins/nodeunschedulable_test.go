package plugins

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

func TestNodeUnschedulable(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		node *corev1.Node
		want string
	}{
		{"schedulable node", pod("p").obj(), node("n").obj(), ""},
		{"cordoned node", pod("p").obj(), node("n").unschedulable().obj(), ErrReasonUnschedulable},
		{"cordoned node, toleration of the unschedulable taint", pod("p").toleration(corev1.TaintNodeUnschedulable, "", corev1.TolerationOpExists, corev1.TaintEffectNoSchedule).obj(), node("n").unschedulable().obj(), ""},
		{"cordoned node, toleration of everything", pod("p").toleration("", "", corev1.TolerationOpExists, "").obj(), node("n").unschedulable().obj(), ""},
		{"cordoned node, toleration with another effect", pod("p").toleration(corev1.TaintNodeUnschedulable, "", corev1.TolerationOpExists, corev1.TaintEffectNoExecute).obj(), node("n").unschedulable().obj(), ErrReasonUnschedulable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runFilter(NewNodeUnschedulable(), tt.pod, "n", []*corev1.Node{tt.node}, nil)
			assert.Equal(t, tt.want, reasonsOf(err))
			if tt.want != "" {
				assert.True(t, errors.Is(err, scheduler.ErrUnresolvable))
			}
		})
	}
}

func TestNodeName(t *testing.T) {
	tests := []struct {
		name     string
		nodeName string
		want     string
	}{
		{"no node name", "", ""},
		{"same node", "n", ""},
		{"other node", "m", ErrReasonNodeName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pod("p").obj()
			p.Spec.NodeName = tt.nodeName
			err := runFilter(NewNodeName(), p, "n", []*corev1.Node{node("n").obj()}, nil)
			assert.Equal(t, tt.want, reasonsOf(err))
		})
	}
}

func TestSchedulingGates(t *testing.T) {
	p := pod("p").obj()
	assert.NoError(t, NewSchedulingGates().PreEnqueue(t.Context(), p))
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}, {Name: "example.com/b"}}
	err := NewSchedulingGates().PreEnqueue(t.Context(), p)
	assert.ErrorIs(t, err, scheduler.ErrUnschedulable)
	assert.Equal(t, "waiting for scheduling gates: [example.com/a example.com/b]", err.Error())
}
