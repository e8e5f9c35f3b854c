package kubelet

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNewerThan(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"12", "11", true},
		{"11", "12", false},
		{"12", "12", false},
		{"100", "99", true}, // numbers, not strings
		{"abc", "abd", true},
		{"abc", "abc", false},
		{"", "5", true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, newerThan(tt.a, tt.b), "%q > %q", tt.a, tt.b)
	}
}
