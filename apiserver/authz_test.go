package apiserver_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/authz"
	"github.com/podkit/podkit/apiserver/auth/nodeauthz"
	"github.com/podkit/podkit/apiserver/auth/rbac"
	"github.com/podkit/podkit/internal/testutil"
)

// tokenUsers is a test authenticator: bearer token → user. The real
// authenticators (apiserver/auth/authn) are tested on their own; these
// tests are about what happens after authentication.
var tokenUsers = map[string]*auth.DefaultUser{
	"admin-token":  {Name: "kubernetes-admin", Groups: []string{auth.GroupMasters, auth.GroupAuthenticated}},
	"jane-token":   {Name: "jane", UID: "u-jane", Groups: []string{auth.GroupAuthenticated}},
	"bob-token":    {Name: "bob", Groups: []string{auth.GroupAuthenticated}},
	"node-a-token": {Name: "system:node:node-a", Groups: []string{nodeauthz.GroupNodes, auth.GroupAuthenticated}},
	"node-b-token": {Name: "system:node:node-b", Groups: []string{nodeauthz.GroupNodes, auth.GroupAuthenticated}},
}

func tokenAuthenticator() auth.Authenticator {
	return auth.AuthenticatorFunc(func(r *http.Request) (*auth.Response, bool, error) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return nil, false, nil
		}
		u, ok := tokenUsers[tok]
		if !ok {
			return nil, false, errors.New("invalid bearer token")
		}
		return &auth.Response{User: u}, true, nil
	})
}

// newSecureServer is a test server authenticating tokenUsers and
// authorizing like kube-apiserver's default: system:masters, Node, RBAC.
func newSecureServer(t *testing.T) *testServer {
	t.Helper()
	var ts *testServer
	ts = newTestServer(t, func(c *apiserver.Config) {
		c.Authenticator = tokenAuthenticator()
		r, err := rbac.New(rbac.Config{Store: c.Store, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		n, err := nodeauthz.New(nodeauthz.Config{Pods: c.Store, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		c.Authorizer = authz.Union(authz.Privileged(), n, r)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ts.srv.RunControllers(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return ts
}

func (ts *testServer) clientFor(t *testing.T, token string) *kubernetes.Clientset {
	t.Helper()
	rc := rest.CopyConfig(ts.config)
	rc.BearerToken = token
	c, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	return c
}

func mustCreate[T any](t *testing.T, create func(context.Context, T, metav1.CreateOptions) (T, error), obj T) {
	t.Helper()
	_, err := create(context.Background(), obj, metav1.CreateOptions{})
	require.NoError(t, err)
}

func TestAuthorizationRBAC(t *testing.T) {
	ts := newSecureServer(t)
	ctx := context.Background()
	admin, jane := ts.clientFor(t, "admin-token"), ts.clientFor(t, "jane-token")
	for _, ns := range []string{"team-a", "team-b"} {
		mustCreate(t, admin.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	mustCreate(t, admin.RbacV1().RoleBindings("team-a").Create, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "jane-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "jane"}},
	})
	require.Eventually(t, func() bool {
		_, err := jane.CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{})
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "jane lists pods in team-a")

	_, err := jane.CoreV1().Pods("team-b").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Equal(t, `pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "team-b"`, err.Error())

	_, err = jane.CoreV1().Pods("team-a").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Equal(t, `pods is forbidden: User "jane" cannot create resource "pods" in API group "" in the namespace "team-a"`, err.Error())

	_, err = jane.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	assert.Equal(t, `nodes "n1" is forbidden: User "jane" cannot get resource "nodes" in API group "" at the cluster scope`, err.Error())

	// Discovery is open to authenticated users.
	_, err = jane.Discovery().ServerGroups()
	require.NoError(t, err)

	// SelfSubjectAccessReview through client-go.
	ssar, err := jane.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: "team-a", Verb: "watch", Resource: "pods"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.True(t, ssar.Status.Allowed)

	// SubjectAccessReview needs its own permission; the admin has it.
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane",
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "team-b", Verb: "get", Resource: "pods"}}}
	_, err = jane.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.False(t, sar.Status.Allowed)
	lsar, err := admin.AuthorizationV1().LocalSubjectAccessReviews("team-a").Create(ctx, &authorizationv1.LocalSubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane",
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.True(t, lsar.Status.Allowed)
	assert.Equal(t, "team-a", lsar.Spec.ResourceAttributes.Namespace)
}

func TestAuthorizationKubectlCanIAndImpersonation(t *testing.T) {
	bin := testutil.Kubectl(t, 32)
	ts := newSecureServer(t)
	// kubectl sends bearer tokens over TLS only.
	tlsServer := httptest.NewTLSServer(ts.srv.Handler())
	t.Cleanup(func() { tlsServer.CloseClientConnections(); tlsServer.Close() })
	admin := ts.clientFor(t, "admin-token")
	for _, ns := range []string{"team-a", "team-b"} {
		mustCreate(t, admin.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	mustCreate(t, admin.RbacV1().RoleBindings("team-a").Create, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "jane-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "jane"}},
	})
	kubectl := func(token string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, append([]string{"--server=" + tlsServer.URL, "--insecure-skip-tls-verify", "--token=" + token}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return strings.TrimSpace(out.String()), strings.TrimSpace(errOut.String()), code
	}
	require.Eventually(t, func() bool {
		out, _, _ := kubectl("jane-token", "auth", "can-i", "list", "pods", "-n", "team-a")
		return out == "yes"
	}, 30*time.Second, 50*time.Millisecond)
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"auth", "can-i", "get", "pods", "-n", "team-a"}, "yes", 0},
		{[]string{"auth", "can-i", "list", "pods", "-n", "team-b"}, "no", 1},
		{[]string{"auth", "can-i", "create", "pods", "-n", "team-a"}, "no", 1},
		{[]string{"auth", "can-i", "get", "secrets", "-n", "team-a"}, "no", 1},
		{[]string{"auth", "can-i", "get", "/version"}, "yes", 0},
	} {
		out, errOut, code := kubectl("jane-token", tc.args...)
		assert.Equal(t, tc.want, out, "%v: %s", tc.args, errOut)
		assert.Equal(t, tc.code, code, "%v", tc.args)
	}
	out, errOut, code := kubectl("admin-token", "auth", "can-i", "delete", "nodes")
	assert.Equal(t, "yes", out, errOut)
	assert.Zero(t, code)

	out, errOut, code = kubectl("jane-token", "auth", "can-i", "--list", "-n", "team-a")
	require.Zero(t, code, errOut)
	var podsLine string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "pods ") {
			podsLine = l
		}
	}
	assert.Contains(t, podsLine, "[get list watch]", out)
	assert.Contains(t, out, "selfsubjectaccessreviews.authorization.k8s.io")

	out, errOut, code = kubectl("jane-token", "get", "pods", "-n", "team-b")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "team-b"`, out)

	// bob may not impersonate until RBAC grants the impersonate verb.
	_, errOut, code = kubectl("bob-token", "--as=jane", "get", "pods", "-n", "team-a")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `users "jane" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope`)
	mustCreate(t, admin.RbacV1().ClusterRoles().Create, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "impersonate-jane"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{"jane"}}},
	})
	mustCreate(t, admin.RbacV1().ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bob-impersonates-jane"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "impersonate-jane"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}},
	})
	require.Eventually(t, func() bool {
		_, _, code := kubectl("bob-token", "--as=jane", "get", "pods", "-n", "team-a")
		return code == 0
	}, 30*time.Second, 50*time.Millisecond)
	// As jane, bob has jane's rights and no more.
	_, errOut, code = kubectl("bob-token", "--as=jane", "get", "pods", "-n", "team-b")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `User "jane" cannot list resource "pods"`)
	out, _, _ = kubectl("bob-token", "--as=jane", "auth", "can-i", "list", "pods", "-n", "team-a")
	assert.Equal(t, "yes", out)
	// Groups need their own grant; other users too.
	_, errOut, code = kubectl("bob-token", "--as=jane", "--as-group=admins", "get", "pods", "-n", "team-a")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `groups "admins" is forbidden: User "bob" cannot impersonate resource "groups" in API group "" at the cluster scope`)
	_, errOut, code = kubectl("bob-token", "--as=kubernetes-admin", "get", "pods", "-n", "team-a")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `users "kubernetes-admin" is forbidden`)
	// The admin may impersonate anyone, groups included.
	out, errOut, code = kubectl("admin-token", "--as=someone", "--as-group=system:masters", "auth", "can-i", "delete", "nodes")
	assert.Equal(t, "yes", out, errOut)
	assert.Zero(t, code)
	out, _, _ = kubectl("admin-token", "--as=someone", "auth", "can-i", "delete", "nodes")
	assert.Equal(t, "no", out)
}

func TestNodeAuthorizerSecrets(t *testing.T) {
	ts := newSecureServer(t)
	ctx := context.Background()
	admin := ts.clientFor(t, "admin-token")
	nodeA, nodeB := ts.clientFor(t, "node-a-token"), ts.clientFor(t, "node-b-token")
	for _, name := range []string{"secret-a", "secret-b"} {
		mustCreate(t, admin.CoreV1().Secrets("default").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
			StringData: map[string]string{"k": "v"}})
	}
	pod := func(name, node, secret string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
		}}
	}
	mustCreate(t, admin.CoreV1().Pods("default").Create, pod("on-a", "node-a", "secret-a"))
	mustCreate(t, admin.CoreV1().Pods("default").Create, pod("on-b", "node-b", "secret-b"))
	require.Eventually(t, func() bool {
		_, err := nodeA.CoreV1().Secrets("default").Get(ctx, "secret-a", metav1.GetOptions{})
		return err == nil
	}, 30*time.Second, 20*time.Millisecond)
	_, err := nodeB.CoreV1().Secrets("default").Get(ctx, "secret-b", metav1.GetOptions{})
	require.NoError(t, err)

	_, err = nodeA.CoreV1().Secrets("default").Get(ctx, "secret-b", metav1.GetOptions{})
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Equal(t, `secrets "secret-b" is forbidden: User "system:node:node-a" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'node-a' and this object`, err.Error())
	_, err = nodeA.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "a node cannot list secrets: %v", err)

	// Pods: its own, yes; node B's, no. Nodes: its own status only.
	_, err = nodeA.CoreV1().Pods("default").Get(ctx, "on-a", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = nodeA.CoreV1().Pods("default").Get(ctx, "on-b", metav1.GetOptions{})
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	_, err = nodeA.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
	require.NoError(t, err)
	mustCreate(t, nodeA.CoreV1().Nodes().Create, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
	mustCreate(t, admin.CoreV1().Nodes().Create, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}})
	_, err = nodeA.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = nodeA.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{})
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	// When the pod leaves node B, node B loses the secret.
	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, "on-b", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
	require.Eventually(t, func() bool {
		_, err := nodeB.CoreV1().Secrets("default").Get(ctx, "secret-b", metav1.GetOptions{})
		return apierrors.IsForbidden(err)
	}, 30*time.Second, 20*time.Millisecond)
}
