package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestConfigMap(t *testing.T) {
	cm := func(data map[string]string, bin map[string][]byte) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: data, BinaryData: bin}
	}
	cases := []struct {
		name string
		obj  *corev1.ConfigMap
		want []want
	}{
		{"valid", cm(map[string]string{"app.properties": "a=b", "KEY_1": "x", "-dash": ""}, map[string][]byte{"logo.png": {1, 2}}), nil},
		{"bad key", cm(map[string]string{"a/b": "x"}, nil), []want{inv("data[a/b]", "valid config key")}},
		{"dot-dot key", cm(map[string]string{"..data": "x"}, nil), []want{inv("data[..data]", "must not start with '..'")}},
		{"binary bad key", cm(nil, map[string][]byte{"a b": nil}), []want{inv("binaryData[a b]", "valid config key")}},
		{"key in both", cm(map[string]string{"k": "x"}, map[string][]byte{"k": {1}}), []want{inv("data[k]", "duplicate of key present in binaryData")}},
		{"too large", cm(map[string]string{"a": strings.Repeat("x", 1<<20), "b": "y"}, nil), []want{tooLong("[]")}}, // Kubernetes reports "[]: Too long"
		{"exactly 1MiB", cm(map[string]string{"a": strings.Repeat("x", 1<<20)}, nil), nil},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, v.ValidateCreate(tc.obj), tc.want...) })
	}
}

func TestConfigMapImmutable(t *testing.T) {
	old := &corev1.ConfigMap{ObjectMeta: storedMeta(metav1.ObjectMeta{Name: "cfg", Namespace: "default"}), Data: map[string]string{"a": "1"}, Immutable: ptr(true)}
	v := Default()
	same := old.DeepCopy()
	same.Labels = map[string]string{"x": "y"}
	expectErrors(t, v.ValidateUpdate(same, old))
	changed := old.DeepCopy()
	changed.Data["a"] = "2"
	changed.BinaryData = map[string][]byte{"b": {1}}
	expectErrors(t, v.ValidateUpdate(changed, old),
		forb("data", "field is immutable when `immutable` is set"), forb("binaryData", "field is immutable when `immutable` is set"))
	unset := old.DeepCopy()
	unset.Immutable = nil
	expectErrors(t, v.ValidateUpdate(unset, old), forb("immutable", "field is immutable when `immutable` is set"))
	// A mutable config map may change and become immutable.
	mutable := old.DeepCopy()
	mutable.Immutable = nil
	next := mutable.DeepCopy()
	next.Data["a"], next.Immutable = "3", ptr(true)
	expectErrors(t, v.ValidateUpdate(next, mutable))
}

func TestSecret(t *testing.T) {
	secret := func(typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Type: typ, Data: data}
	}
	cases := []struct {
		name string
		obj  *corev1.Secret
		want []want
	}{
		{"opaque", secret(corev1.SecretTypeOpaque, map[string][]byte{"password": []byte("x")}), nil},
		{"untyped", secret("", nil), nil},
		{"bad key", secret(corev1.SecretTypeOpaque, map[string][]byte{"a:b": nil}), []want{inv("data[a:b]", "valid config key")}},
		{"too large", secret(corev1.SecretTypeOpaque, map[string][]byte{"a": make([]byte, 1<<20+1)}), []want{tooLong("data")}},
		{"dockerconfigjson missing", secret(corev1.SecretTypeDockerConfigJson, nil), []want{req("data[.dockerconfigjson]")}},
		{"dockerconfigjson not json", secret(corev1.SecretTypeDockerConfigJson, map[string][]byte{".dockerconfigjson": []byte("{")}),
			[]want{inv("data[.dockerconfigjson]", "unexpected end of JSON input")}},
		{"dockerconfigjson ok", secret(corev1.SecretTypeDockerConfigJson, map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)}), nil},
		{"tls needs both keys", secret(corev1.SecretTypeTLS, map[string][]byte{"tls.crt": []byte("x")}), []want{req("data[tls.key]")}},
		{"tls ok", secret(corev1.SecretTypeTLS, map[string][]byte{"tls.crt": nil, "tls.key": nil}), nil},
		{"service account token needs annotation", secret(corev1.SecretTypeServiceAccountToken, nil),
			[]want{req("metadata.annotations[kubernetes.io/service-account.name]")}},
		{"basic auth needs a field", secret(corev1.SecretTypeBasicAuth, nil), []want{req("data[username]"), req("data[password]")}},
		{"ssh needs key", secret(corev1.SecretTypeSSHAuth, nil), []want{req("data[ssh-privatekey]")}},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, v.ValidateCreate(tc.obj), tc.want...) })
	}
	// stringData not yet merged into data still counts.
	s := secret(corev1.SecretTypeTLS, map[string][]byte{"tls.crt": nil})
	s.StringData = map[string]string{"tls.key": "k"}
	expectErrors(t, v.ValidateCreate(s))
}

func TestSecretUpdate(t *testing.T) {
	old := &corev1.Secret{ObjectMeta: storedMeta(metav1.ObjectMeta{Name: "s", Namespace: "default"}), Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"a": []byte("1")}, Immutable: ptr(true)}
	v := Default()
	retyped := old.DeepCopy()
	retyped.Type = corev1.SecretTypeBasicAuth
	retyped.Data["username"] = nil
	expectErrors(t, v.ValidateUpdate(retyped, old), inv("type", "field is immutable"), forb("data", "when `immutable` is set"))
	unset := old.DeepCopy()
	unset.Immutable = ptr(false)
	expectErrors(t, v.ValidateUpdate(unset, old), forb("immutable", "when `immutable` is set"))
}

func TestServiceAccount(t *testing.T) {
	v := Default()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "ci"}}
	expectErrors(t, v.ValidateCreate(sa))
	sa.Name = "Builder"
	expectErrors(t, v.ValidateCreate(sa), inv("metadata.name", ""))
	old := &corev1.ServiceAccount{ObjectMeta: storedMeta(metav1.ObjectMeta{Name: "builder", Namespace: "ci"})}
	upd := old.DeepCopy()
	upd.Secrets = []corev1.ObjectReference{{Name: "tok"}}
	expectErrors(t, v.ValidateUpdate(upd, old))
}
