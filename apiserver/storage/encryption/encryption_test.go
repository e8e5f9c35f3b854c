package encryption_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/storage/encryption"
)

func key(b byte, n int) string {
	return base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(b), n)))
}

// configYAML builds an EncryptionConfiguration for secrets with providers.
func configYAML(providers ...string) []byte {
	return []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ["secrets", "*.apps"]
    providers:
` + strings.Join(providers, "\n") + "\n")
}

func gcm(names ...string) string {
	s := "    - aesgcm:\n        keys:\n"
	for _, n := range names {
		s += fmt.Sprintf("        - name: %s\n          secret: %s\n", n, key(n[len(n)-1], 32))
	}
	return s
}

const identityProvider = "    - identity: {}"

func mustConfig(t *testing.T, data []byte) *encryption.Config {
	t.Helper()
	c, err := encryption.ParseConfig(data)
	require.NoError(t, err)
	return c
}

const secretKey = "/registry/secrets/ns/db-password"

func TestAESGCMRoundTripAndFormat(t *testing.T) {
	ctx := context.Background()
	c := mustConfig(t, configYAML(gcm("key1")))
	plain := []byte("k8s\x00 the password is hunter2")
	sealed, err := c.TransformToStorage(ctx, plain, secretKey)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(sealed), "k8s:enc:aesgcm:v1:key1:"), "Kubernetes' prefix")
	assert.NotContains(t, string(sealed), "hunter2")
	again, err := c.TransformToStorage(ctx, plain, secretKey)
	require.NoError(t, err)
	assert.NotEqual(t, sealed, again, "a fresh nonce per write")

	got, err := c.TransformFromStorage(ctx, sealed, secretKey)
	require.NoError(t, err)
	assert.Equal(t, plain, got)

	// The key is authenticated: the value does not decrypt elsewhere.
	_, err = c.TransformFromStorage(ctx, sealed, "/registry/secrets/ns/other")
	require.ErrorIs(t, err, encryption.ErrDecrypt)
	// Tampering is detected.
	tampered := append([]byte(nil), sealed...)
	tampered[len(tampered)-1] ^= 1
	_, err = c.TransformFromStorage(ctx, tampered, secretKey)
	require.ErrorIs(t, err, encryption.ErrDecrypt)
}

func TestResourcesNotConfiguredAreStoredAsIs(t *testing.T) {
	ctx := context.Background()
	c := mustConfig(t, configYAML(gcm("key1")))
	for _, k := range []string{"/registry/configmaps/ns/a", "/registry/pods/ns/a", "/registry/batch/jobs/ns/a"} {
		out, err := c.TransformToStorage(ctx, []byte("plain"), k)
		require.NoError(t, err)
		assert.Equal(t, "plain", string(out), k)
	}
	out, err := c.TransformToStorage(ctx, []byte("plain"), "/registry/apps/deployments/ns/a")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(out), "k8s:enc:aesgcm:v1:key1:"), "*.apps matches")
	assert.True(t, c.Encrypts(schema.GroupResource{Resource: "secrets"}))
	assert.False(t, c.Encrypts(schema.GroupResource{Resource: "configmaps"}))
}

func TestKeyRotation(t *testing.T) {
	ctx := context.Background()
	old := mustConfig(t, configYAML(gcm("key1")))
	byKey1, err := old.TransformToStorage(ctx, []byte("v1"), secretKey)
	require.NoError(t, err)

	// Step 1: the new key first; everything still reads.
	rotating := mustConfig(t, configYAML(gcm("key2", "key1")))
	got, err := rotating.TransformFromStorage(ctx, byKey1, secretKey)
	require.NoError(t, err)
	assert.Equal(t, "v1", string(got))
	byKey2, err := rotating.TransformToStorage(ctx, []byte("v2"), secretKey)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(byKey2), "k8s:enc:aesgcm:v1:key2:"), "the first key encrypts")

	// Step 2: once rewritten, the old key goes; its values no longer read.
	rotated := mustConfig(t, configYAML(gcm("key2")))
	got, err = rotated.TransformFromStorage(ctx, byKey2, secretKey)
	require.NoError(t, err)
	assert.Equal(t, "v2", string(got))
	_, err = rotated.TransformFromStorage(ctx, byKey1, secretKey)
	require.ErrorIs(t, err, encryption.ErrDecrypt)
	assert.Contains(t, err.Error(), "aesgcm")
}

func TestIdentity(t *testing.T) {
	ctx := context.Background()
	plain := []byte("written before encryption was turned on")
	// Without identity listed, unencrypted data is refused (Kubernetes).
	strict := mustConfig(t, configYAML(gcm("key1")))
	_, err := strict.TransformFromStorage(ctx, plain, secretKey)
	require.ErrorIs(t, err, encryption.ErrDecrypt)
	// Migrating: encrypt new writes, read old ones.
	migrating := mustConfig(t, configYAML(gcm("key1"), identityProvider))
	got, err := migrating.TransformFromStorage(ctx, plain, secretKey)
	require.NoError(t, err)
	assert.Equal(t, plain, got)
	// Decrypting back: identity first writes plaintext, still reads keys.
	sealed, err := migrating.TransformToStorage(ctx, plain, secretKey)
	require.NoError(t, err)
	decrypting := mustConfig(t, configYAML(identityProvider, gcm("key1")))
	out, err := decrypting.TransformToStorage(ctx, plain, secretKey)
	require.NoError(t, err)
	assert.Equal(t, plain, out)
	got, err = decrypting.TransformFromStorage(ctx, sealed, secretKey)
	require.NoError(t, err)
	assert.Equal(t, plain, got)
}

func TestAESCBC(t *testing.T) {
	ctx := context.Background()
	c := mustConfig(t, configYAML("    - aescbc:\n        keys:\n        - name: k\n          secret: "+key('c', 32)))
	for _, n := range []int{0, 1, 15, 16, 17, 100} {
		plain := []byte(strings.Repeat("x", n))
		sealed, err := c.TransformToStorage(ctx, plain, secretKey)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(sealed), "k8s:enc:aescbc:v1:k:"))
		got, err := c.TransformFromStorage(ctx, sealed, secretKey)
		require.NoError(t, err)
		assert.Equal(t, plain, got, "length %d", n)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml string
		want string
	}{
		"wrong kind":       {"apiVersion: v1\nkind: ConfigMap\n", "EncryptionConfiguration"},
		"unknown field":    {string(configYAML(gcm("key1"))) + "extra: 1\n", "unknown field"},
		"no providers":     {"apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n", "needs resources and providers"},
		"bad key length":   {string(configYAML("    - aesgcm:\n        keys:\n        - name: k\n          secret: " + key('a', 10))), "16, 24 or 32"},
		"not base64":       {string(configYAML("    - aesgcm:\n        keys:\n        - name: k\n          secret: '%%%'")), "base64"},
		"duplicate name":   {string(configYAML(gcm("key1", "key1"))), "duplicate"},
		"two in one entry": {string(configYAML("    - identity: {}\n      aesgcm:\n        keys:\n        - name: k\n          secret: " + key('a', 32))), "exactly one"},
		"no keys":          {string(configYAML("    - aesgcm:\n        keys: []")), "no keys"},
		"core wildcard":    {strings.Replace(string(configYAML(gcm("key1"))), `"secrets"`, `"*."`, 1), "core resources"},
	} {
		_, err := encryption.ParseConfig([]byte(tc.yaml))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.want, name)
	}
}

func TestResourceOfKey(t *testing.T) {
	for key, want := range map[string]schema.GroupResource{
		"/registry/secrets/ns/a":                             {Resource: "secrets"},
		"/registry/namespaces/a":                             {Resource: "namespaces"},
		"/registry/apps/deployments/ns/a":                    {Group: "apps", Resource: "deployments"},
		"/registry/coordination.k8s.io/leases/ns/a":          {Group: "coordination.k8s.io", Resource: "leases"},
		"/registry/rbac.authorization.k8s.io/clusterroles/x": {Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	} {
		assert.Equal(t, want, encryption.ResourceOfKey(key), key)
	}
}
