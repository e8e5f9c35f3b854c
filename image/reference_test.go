package image_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/image"
)

func TestParseReference(t *testing.T) {
	digest := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cases := []struct {
		in, want, familiar string
	}{
		{"nginx", "docker.io/library/nginx:latest", "nginx:latest"},
		{"nginx:1.25", "docker.io/library/nginx:1.25", "nginx:1.25"},
		{"library/nginx", "docker.io/library/nginx:latest", "nginx:latest"},
		{"docker.io/nginx", "docker.io/library/nginx:latest", "nginx:latest"},
		{"index.docker.io/library/nginx:1", "docker.io/library/nginx:1", "nginx:1"},
		{"myorg/app:v1", "docker.io/myorg/app:v1", "myorg/app:v1"},
		{"registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9"},
		{"localhost/app", "localhost/app:latest", "localhost/app:latest"},
		{"localhost:5000/a/b/c:tag", "localhost:5000/a/b/c:tag", "localhost:5000/a/b/c:tag"},
		{"127.0.0.1:5000/app", "127.0.0.1:5000/app:latest", "127.0.0.1:5000/app:latest"},
		{"nginx@" + digest, "docker.io/library/nginx@" + digest, "nginx@" + digest},
		{"nginx:1.25@" + digest, "docker.io/library/nginx@" + digest, "nginx@" + digest},
		{"ab_c-d__e/f--g.h:T.a-g_1", "docker.io/ab_c-d__e/f--g.h:T.a-g_1", "ab_c-d__e/f--g.h:T.a-g_1"},
		{"[::1]:5000/app:1", "[::1]:5000/app:1", "[::1]:5000/app:1"},
		{"Foo.example.com/app", "Foo.example.com/app:latest", "Foo.example.com/app:latest"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			r, err := image.ParseReference(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, r.String())
			assert.Equal(t, tc.familiar, r.Familiar())
			again, err := image.ParseReference(r.String())
			require.NoError(t, err)
			assert.Equal(t, r, again, "normalising is idempotent")
		})
	}
}

func TestParseReferenceInvalid(t *testing.T) {
	for _, in := range []string{
		"", " nginx", "nginx ", "NGINX", "myorg/App", "nginx:", "nginx:-bad", ":tag", "nginx@sha256:abc",
		"nginx@sha256:" + "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
		"nginx@md5", "a//b", "a/", "-a/b", "a..b/c", "host:port/app", "nginx:" + string(make([]byte, 129)),
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"bad_host.com:x/app",
	} {
		_, err := image.ParseReference(in)
		assert.ErrorIs(t, err, image.ErrInvalidImageName, "%q", in)
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	for in, want := range map[string]string{
		"nginx": "Always", "nginx:latest": "Always", "nginx:1": "IfNotPresent",
		"nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": "IfNotPresent",
	} {
		r, err := image.ParseReference(in)
		require.NoError(t, err)
		assert.Equal(t, want, string(image.DefaultPullPolicy(r)), in)
	}
}
