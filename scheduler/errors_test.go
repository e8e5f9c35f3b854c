package scheduler

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFitErrorMessage(t *testing.T) {
	taint := Unresolvable("node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }")
	tests := []struct {
		name string
		err  *FitError
		want string
	}{
		{
			"issue example",
			&FitError{NumAllNodes: 3, Diagnosis: Diagnosis{NodeToStatus: map[string]error{
				"w1": Unschedulable("Insufficient cpu"), "cp1": taint, "cp2": taint}}},
			"0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }.",
		},
		{
			"several reasons on one node, sorted",
			&FitError{NumAllNodes: 2, Diagnosis: Diagnosis{NodeToStatus: map[string]error{
				"a": Unschedulable("Insufficient memory", "Insufficient cpu"), "b": Unschedulable("Insufficient cpu")}}},
			"0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu.",
		},
		{
			"prefilter rejection",
			&FitError{NumAllNodes: 5, Diagnosis: Diagnosis{PreFilterMsg: "pod has unbound immediate PersistentVolumeClaims"}},
			"0/5 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
		},
		{
			"plain wrapped errors from user plugins",
			&FitError{NumAllNodes: 1, Diagnosis: Diagnosis{NodeToStatus: map[string]error{
				"a": fmt.Errorf("node too hot: %w", ErrUnschedulable)}}},
			"0/1 nodes are available: 1 node too hot.",
		},
		{"no reasons", &FitError{NumAllNodes: 0}, "0/0 nodes are available:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
			assert.ErrorIs(t, tt.err, ErrUnschedulable)
		})
	}
}

func TestStatusErrors(t *testing.T) {
	assert.ErrorIs(t, Unresolvable("x"), ErrUnschedulable)
	assert.ErrorIs(t, Unresolvable("x"), ErrUnresolvable)
	assert.NotErrorIs(t, Unschedulable("x"), ErrUnresolvable)
	assert.Equal(t, "a, b", Unschedulable("a", "b").Error())
	assert.Equal(t, []string{"too hot"}, Reasons(fmt.Errorf("too hot: %w", ErrUnresolvable)))
	assert.Nil(t, Reasons(nil))

	shared := Unschedulable("r")
	e := withPlugin(shared, "P")
	assert.Equal(t, "P", pluginOf(e))
	assert.Equal(t, "", shared.Plugin, "a shared error value is not mutated")
	e = withPlugin(fmt.Errorf("x: %w", ErrUnresolvable), "Q")
	assert.True(t, errors.Is(e, ErrUnresolvable))
	assert.Equal(t, "Q", pluginOf(e))
}
