package authn_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/auth/authn"
	"github.com/podkit/podkit/apiserver/auth/satoken"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

const issuer = "https://kubernetes.default.svc.cluster.local"

type saEnv struct {
	store  storage.Store
	signer *satoken.Signer
	key    crypto.Signer
	authn  *authn.ServiceAccountTokens
	now    time.Time
}

func newSAEnv(t *testing.T) *saEnv {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	signer, err := satoken.NewSigner(key)
	require.NoError(t, err)
	e := &saEnv{store: memory.New(), signer: signer, key: key, now: time.Now()}
	e.authn = &authn.ServiceAccountTokens{Keys: []crypto.PublicKey{key.Public()}, Issuers: []string{issuer},
		Objects: e.store, Now: func() time.Time { return e.now }}
	ctx := t.Context()
	_, err = e.store.Create(ctx, storage.Key(schema.GroupResource{Resource: "serviceaccounts"}, "default", "app"),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "sa-uid"}})
	require.NoError(t, err)
	e.pod(t, "web", "pod-uid")
	return e
}

func (e *saEnv) pod(t *testing.T, name, uid string) {
	_, err := e.store.Create(t.Context(), storage.Key(schema.GroupResource{Resource: "pods"}, "default", name),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: typesUID(uid)},
			Spec: corev1.PodSpec{ServiceAccountName: "app"}})
	require.NoError(t, err)
}

func (e *saEnv) token(t *testing.T, mutate func(*satoken.Claims)) string {
	c := &satoken.Claims{Issuer: issuer, Subject: "system:serviceaccount:default:app", Audience: satoken.Audience{issuer},
		IssuedAt: e.now.Unix(), NotBefore: e.now.Unix(), Expiry: e.now.Add(time.Hour).Unix(), ID: "jti-1",
		Kubernetes: &satoken.PrivateClaims{Namespace: "default", ServiceAccount: satoken.Ref{Name: "app", UID: "sa-uid"},
			Pod: &satoken.Ref{Name: "web", UID: "pod-uid"}}}
	if mutate != nil {
		mutate(c)
	}
	tok, err := e.signer.Sign(c)
	require.NoError(t, err)
	return tok
}

func TestServiceAccountToken(t *testing.T) {
	e := newSAEnv(t)
	ctx := t.Context()
	resp, ok, err := e.authn.AuthenticateToken(ctx, e.token(t, nil))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "system:serviceaccount:default:app", resp.User.GetName())
	assert.Equal(t, "sa-uid", resp.User.GetUID())
	assert.Equal(t, []string{"system:serviceaccounts", "system:serviceaccounts:default"}, resp.User.GetGroups())
	assert.Equal(t, []string{"web"}, resp.User.GetExtra()[authn.ExtraPodName])
	assert.Equal(t, []string{"JTI=jti-1"}, resp.User.GetExtra()[authn.ExtraCredentialID])
	assert.Equal(t, []string{issuer}, resp.Audiences)

	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherSigner, _ := satoken.NewSigner(other)
	forged, err := otherSigner.Sign(&satoken.Claims{Issuer: issuer, Subject: "system:serviceaccount:default:app", Expiry: e.now.Add(time.Hour).Unix()})
	require.NoError(t, err)

	tests := []struct {
		name    string
		token   string
		wantErr string // "" with ok=false: not this authenticator's token
	}{
		{"forged (another key)", forged, ""},
		{"not a JWT", "abc", ""},
		{"another issuer", e.token(t, func(c *satoken.Claims) { c.Issuer = "https://elsewhere" }), ""},
		{"expired", e.token(t, func(c *satoken.Claims) { c.Expiry = e.now.Add(-time.Hour).Unix() }), "expired"},
		{"wrong audience", e.token(t, func(c *satoken.Claims) { c.Audience = satoken.Audience{"vault"} }), "is invalid for the target audiences"},
		{"subject does not match", e.token(t, func(c *satoken.Claims) { c.Subject = "system:serviceaccount:kube-system:admin" }), "inconsistent"},
		{"account recreated", e.token(t, func(c *satoken.Claims) { c.Kubernetes.ServiceAccount.UID = "old" }), "deleted and recreated"},
		{"pod gone", e.token(t, func(c *satoken.Claims) { c.Kubernetes.Pod = &satoken.Ref{Name: "gone", UID: "x"} }), "has been deleted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ok, err := e.authn.AuthenticateToken(ctx, tc.token)
			assert.False(t, ok)
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
}

// Deleting the pod a token is bound to revokes the token at once.
func TestServiceAccountTokenRevokedWithItsPod(t *testing.T) {
	e := newSAEnv(t)
	ctx := t.Context()
	e.pod(t, "second", "second-uid")
	tok := e.token(t, func(c *satoken.Claims) { c.Kubernetes.Pod = &satoken.Ref{Name: "second", UID: "second-uid"} })
	_, ok, err := e.authn.AuthenticateToken(ctx, tok)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = e.store.Delete(ctx, storage.Key(schema.GroupResource{Resource: "pods"}, "default", "second"), nil)
	require.NoError(t, err)
	_, ok, err = e.authn.AuthenticateToken(ctx, tok)
	assert.False(t, ok)
	assert.ErrorContains(t, err, "pod default/second has been deleted")
	e.pod(t, "second", "new-uid")
	_, ok, err = e.authn.AuthenticateToken(ctx, tok)
	assert.False(t, ok, "a new pod of the same name does not revive the token")
	assert.ErrorContains(t, err, "deleted and recreated")
	_, ok, _ = e.authn.AuthenticateToken(ctx, e.token(t, nil))
	assert.True(t, ok, "the first pod's token still works")
}

func TestWebhookToken(t *testing.T) {
	calls := 0
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		var tr authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if tr.Spec.Token == "good" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true,
				User: authenticationv1.UserInfo{Username: "ext:jane", UID: "42", Groups: []string{"ext"}}}
		}
		_ = json.NewEncoder(w).Encode(&tr)
	}))
	defer srv.Close()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, pemCert(srv.Certificate().Raw), 0o600))
	kc := filepath.Join(dir, "webhook.kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: wh, cluster: {server: "`+srv.URL+`/authenticate", certificate-authority: "`+caFile+`"}}]
users: [{name: podkit, user: {}}]
contexts: [{name: wh, context: {cluster: wh, user: podkit}}]
current-context: wh
`), 0o600))
	wh, err := authn.NewWebhookTokenFromFile(kc, time.Minute)
	require.NoError(t, err)
	ctx := context.Background()
	resp, ok, err := wh.AuthenticateToken(ctx, "good")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "ext:jane", resp.User.GetName())
	_, ok, _ = wh.AuthenticateToken(ctx, "good")
	assert.True(t, ok)
	assert.Equal(t, 1, calls, "answers are cached")
	_, ok, err = wh.AuthenticateToken(ctx, "bad")
	assert.False(t, ok)
	assert.NoError(t, err)
}
