package apiserver_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/authn"
	"github.com/podkit/podkit/apiserver/auth/satoken"
	"github.com/podkit/podkit/internal/inproc"
)

const testIssuer = "https://kubernetes.default.svc.cluster.local"

// newSecureTestServer is a test server with the token authenticators of
// the secure composition: a static token file (admin-token is in
// system:masters) and service-account tokens it issues itself.
func newSecureTestServer(t *testing.T) (*testServer, kubernetes.Interface) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	signer, err := satoken.NewSigner(key)
	require.NoError(t, err)
	tf, err := authn.ParseTokenFile(strings.NewReader("admin-token,admin,1,system:masters\n"))
	require.NoError(t, err)
	var ts *testServer
	ts = newTestServer(t, func(cfg *apiserver.Config) {
		sa := &authn.ServiceAccountTokens{Keys: []crypto.PublicKey{key.Public()}, Issuers: []string{testIssuer},
			Objects: cfg.Store}
		tokens := authn.TokenUnion(tf, sa)
		cfg.Authenticator = authn.WithAuthenticatedGroup(authn.Bearer(tokens))
		cfg.TokenReviewer = authn.TokenWithAuthenticatedGroup(tokens)
		cfg.ServiceAccountIssuer = &apiserver.ServiceAccountIssuer{Signer: signer, Issuer: testIssuer}
	})
	admin, err := kubernetes.NewForConfig(withToken(ts.config, "admin-token"))
	require.NoError(t, err)
	return ts, admin
}

func withToken(rc *rest.Config, token string) *rest.Config {
	c := rest.CopyConfig(rc)
	c.BearerToken = token
	return c
}

func TestUnauthenticatedIs401(t *testing.T) {
	ts, admin := newSecureTestServer(t)
	for _, tc := range []struct{ name, header string }{
		{"no credentials", ""}, {"unknown token", "Bearer nope"}, {"malformed", "Bearer a b"}, {"basic", "Basic YWRtaW46YWRtaW4="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, ts.http.URL+"/api/v1/namespaces/default/pods", nil)
			require.NoError(t, err)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			var st metav1.Status
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
			assert.Equal(t, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Message: "Unauthorized", Reason: metav1.StatusReasonUnauthorized, Code: 401}, st)
		})
	}
	_, err := ts.client.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{})
	assert.True(t, apierrors.IsUnauthorized(err), "client-go sees 401: %v", err)
	_, err = admin.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{})
	assert.NoError(t, err)

	// In-process components carry a trusted identity instead.
	node, err := kubernetes.NewForConfig(inproc.RESTConfigAs(ts.srv.Handler(), inproc.NodeIdentity("n1")))
	require.NoError(t, err)
	_, err = node.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{})
	assert.NoError(t, err)
	plain, err := kubernetes.NewForConfig(inproc.RESTConfig(ts.srv.Handler()))
	require.NoError(t, err)
	_, err = plain.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{})
	assert.True(t, apierrors.IsUnauthorized(err), "the plain in-process transport claims no identity: %v", err)
}

// The credential stops at the API server: a proxied pods/log request
// reaches the kubelet without the caller's Authorization header.
func TestAuthorizationHeaderIsNotPassedOn(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	kubelet := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = io.WriteString(w, "hello\n")
	}))
	t.Cleanup(kubelet.Close)
	ts, admin := newSecureTestServer(t)
	addNode(t, admin, "node-1", kubelet.Listener.Addr().String())
	addPod(t, admin, "web", "node-1", "app")
	out, err := logs(t, admin, "web", &corev1.PodLogOptions{})
	require.NoError(t, err)
	assert.Equal(t, "hello\n", out)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 1)
	assert.Empty(t, seen[0])
	_ = ts
}

func TestTokenRequestAndReview(t *testing.T) {
	ts, admin := newSecureTestServer(t)
	ctx := t.Context()
	_, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pod, err := admin.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)

	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "app", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: pod.UID},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, tr.Status.Token)
	assert.Equal(t, int64(3600), *tr.Spec.ExpirationSeconds)
	assert.Equal(t, []string{testIssuer}, tr.Spec.Audiences)

	// The token works as a credential and in a TokenReview.
	sa, err := kubernetes.NewForConfig(withToken(ts.config, tr.Status.Token))
	require.NoError(t, err)
	review, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "system:serviceaccount:default:app", review.Status.UserInfo.Username)
	assert.Contains(t, review.Status.UserInfo.Groups, auth.GroupAuthenticated)
	rev, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.True(t, rev.Status.Authenticated)
	assert.Equal(t, "system:serviceaccount:default:app", rev.Status.User.Username)
	assert.Equal(t, []string{"web"}, []string(rev.Status.User.Extra[authn.ExtraPodName]))
	assert.Empty(t, rev.Spec.Token, "the token is not echoed")
	rev, err = admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{
		Token: tr.Status.Token, Audiences: []string{"vault"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.False(t, rev.Status.Authenticated, "another audience")

	// Deleting the pod revokes the token.
	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	_, err = sa.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsUnauthorized(err), "%v", err)
	rev, err = admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.False(t, rev.Status.Authenticated)
	assert.Contains(t, rev.Status.Error, "has been deleted")

	// Requests the API refuses, with Kubernetes' errors.
	_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "app", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](60)}}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsInvalid(err))
	assert.ErrorContains(t, err, "may not specify a duration less than 10 minutes")
	_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "missing", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsNotFound(err))
	_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "app", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web"}}}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a deleted pod: %v", err)
	_, err = admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsBadRequest(err))
}

// With no Authenticator every request is an administrator, as before.
func TestNoAuthenticatorKeepsEveryoneAdmin(t *testing.T) {
	ts := newTestServer(t)
	review, err := ts.client.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "system:admin", review.Status.UserInfo.Username)
	assert.Contains(t, review.Status.UserInfo.Groups, auth.GroupMasters)
	_, err = ts.client.CoreV1().ServiceAccounts("default").CreateToken(t.Context(), "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no issuer: no token subresource")
}
