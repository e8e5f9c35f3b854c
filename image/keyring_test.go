package image_test

import (
	"encoding/base64"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/image"
)

func ref(t *testing.T, s string) image.Reference {
	t.Helper()
	r, err := image.ParseReference(s)
	require.NoError(t, err)
	return r
}

func TestKeyringMatching(t *testing.T) {
	k := image.NewKeyring()
	require.NoError(t, k.AddDockerConfigJSON([]byte(`{"auths": {
		"https://index.docker.io/v1/": {"username": "hub", "password": "h"},
		"registry.example.com": {"auth": "`+base64.StdEncoding.EncodeToString([]byte("ex:pw"))+`"},
		"registry.example.com/team": {"username": "team", "password": "t"},
		"*.corp.example": {"username": "glob", "password": "g"},
		"127.0.0.1:5000": {"username": "local", "password": "l"}
	}}`)))
	users := func(s string) []string {
		var out []string
		for _, a := range k.Lookup(ref(t, s)) {
			out = append(out, a.Username)
		}
		return out
	}
	assert.Equal(t, []string{"hub"}, users("nginx"))
	assert.Equal(t, []string{"hub"}, users("docker.io/myorg/app"))
	assert.Equal(t, []string{"ex"}, users("registry.example.com/other/app"))
	assert.Equal(t, []string{"team", "ex"}, users("registry.example.com/team/app"), "more specific first")
	assert.Equal(t, []string{"ex"}, users("registry.example.com/teamwork/app"), "path prefix is per component")
	assert.Equal(t, []string{"glob"}, users("eu.corp.example/app"))
	assert.Empty(t, users("a.eu.corp.example/app"), "a glob matches one label")
	assert.Equal(t, []string{"local"}, users("127.0.0.1:5000/app"))
	assert.Empty(t, users("127.0.0.1:5001/app"), "ports must match")
	assert.Empty(t, users("127.0.0.1/app"))
	assert.Empty(t, users("quay.io/app"))

	repo, err := name.NewRepository("registry.example.com/team/app")
	require.NoError(t, err)
	a, err := k.Resolve(repo)
	require.NoError(t, err)
	cfg, err := a.Authorization()
	require.NoError(t, err)
	assert.Equal(t, "team", cfg.Username)
	repo, err = name.NewRepository("quay.io/x")
	require.NoError(t, err)
	a, err = k.Resolve(repo)
	require.NoError(t, err)
	assert.Equal(t, authn.Anonymous, a)
}

func TestKeyringFromSecrets(t *testing.T) {
	secrets := []corev1.Secret{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "json"},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"a.example":{"username":"a","password":"p"}}}`)},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
			Type:       corev1.SecretTypeDockercfg,
			Data:       map[string][]byte{corev1.DockerConfigKey: []byte(`{"b.example":{"username":"b","password":"p"}}`)},
		},
		{ObjectMeta: metav1.ObjectMeta{Name: "opaque"}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"x": []byte("y")}},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "broken"},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{`)},
		},
	}
	k, err := image.KeyringFromSecrets(secrets)
	require.Error(t, err)
	assert.ErrorIs(t, err, image.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "broken")
	assert.Equal(t, 2, k.Len(), "valid secrets still count")
	assert.Equal(t, "a", k.Lookup(ref(t, "a.example/x"))[0].Username)
	assert.Equal(t, "b", k.Lookup(ref(t, "b.example/x"))[0].Username)
}

func TestKeyringRejectsBadAuth(t *testing.T) {
	k := image.NewKeyring()
	assert.ErrorIs(t, k.AddDockerConfigJSON([]byte(`{"auths":{"x.io":{"auth":"!!!"}}}`)), image.ErrInvalidConfig)
	assert.ErrorIs(t, k.AddDockerConfigJSON([]byte(`{"auths":{"x.io":{"auth":"`+base64.StdEncoding.EncodeToString([]byte("nocolon"))+`"}}}`)), image.ErrInvalidConfig)
}
