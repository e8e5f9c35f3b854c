package defaults

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestPullPolicyFor(t *testing.T) {
	digest := "sha256:" + strings.Repeat("a", 64)
	tests := []struct {
		image string
		tag   string
		want  corev1.PullPolicy
	}{
		{image: "nginx", tag: "latest", want: corev1.PullAlways},
		{image: "nginx:latest", tag: "latest", want: corev1.PullAlways},
		{image: "nginx:1.27", tag: "1.27", want: corev1.PullIfNotPresent},
		{image: "library/nginx:stable-alpine", tag: "stable-alpine", want: corev1.PullIfNotPresent},
		{image: "docker.io/library/nginx", tag: "latest", want: corev1.PullAlways},
		{image: "localhost:5000/app", tag: "latest", want: corev1.PullAlways},
		{image: "localhost:5000/app:v2", tag: "v2", want: corev1.PullIfNotPresent},
		{image: "127.0.0.1:5000/team/app:v2", tag: "v2", want: corev1.PullIfNotPresent},
		{image: "[::1]:5000/app", tag: "latest", want: corev1.PullAlways},
		{image: "registry.k8s.io/pause:3.10", tag: "3.10", want: corev1.PullIfNotPresent},
		{image: "nginx@" + digest, tag: "", want: corev1.PullIfNotPresent},
		{image: "nginx:latest@" + digest, tag: "latest", want: corev1.PullAlways},
		{image: "nginx:1.2@" + digest, tag: "1.2", want: corev1.PullIfNotPresent},
		{image: "my_app__x-y.z/sub", tag: "latest", want: corev1.PullAlways},
		// Not valid references: Kubernetes cannot find a tag and picks IfNotPresent.
		{image: "", tag: "", want: corev1.PullIfNotPresent},
		{image: "Nginx", tag: "", want: corev1.PullIfNotPresent},
		{image: "nginx:", tag: "", want: corev1.PullIfNotPresent},
		{image: "nginx::1", tag: "", want: corev1.PullIfNotPresent},
		{image: "nginx@sha256:short", tag: "", want: corev1.PullIfNotPresent},
		{image: "nginx:" + strings.Repeat("t", 129), tag: "", want: corev1.PullIfNotPresent},
		{image: strings.Repeat("a", 256), tag: "", want: corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			assert.Equal(t, tt.tag, ImageTag(tt.image))
			assert.Equal(t, tt.want, PullPolicyFor(tt.image))
		})
	}
}
