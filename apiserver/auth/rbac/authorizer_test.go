package rbac

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/authz"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

// startRBAC runs an RBAC authorizer with the bootstrap policy over a
// memory store.
func startRBAC(t *testing.T) (*Authorizer, storage.Store) {
	t.Helper()
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	a, err := New(Config{Store: st, Logger: slog.New(slog.DiscardHandler), RetryInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	require.NoError(t, a.WaitForSync(wctx))
	return a, st
}

func create(t *testing.T, st storage.Store, key string, obj runtime.Object) {
	t.Helper()
	_, err := st.Create(context.Background(), key, obj)
	require.NoError(t, err)
}

func decide(t *testing.T, a *Authorizer, attrs auth.Attributes) auth.Decision {
	t.Helper()
	d, _, err := a.Authorize(context.Background(), attrs)
	require.NoError(t, err)
	return d
}

func TestViewInOneNamespace(t *testing.T) {
	a, st := startRBAC(t)
	jane := &auth.DefaultUser{Name: "jane", Groups: []string{auth.GroupAuthenticated}}
	create(t, st, storage.Key(RoleBindingsGR, "team-a", "jane-view"), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "jane-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{user("jane")},
	})
	pods := func(verb, ns string) auth.Attributes {
		return auth.Attributes{User: jane, ResourceRequest: true, Verb: verb, Resource: "pods", Namespace: ns, APIVersion: "v1"}
	}
	// view is aggregated: its rules arrive once aggregation and the
	// binding's watch event are in.
	require.Eventually(t, func() bool { return decide(t, a, pods("list", "team-a")) == auth.DecisionAllow }, 30*time.Second, 20*time.Millisecond)
	assert.Equal(t, auth.DecisionAllow, decide(t, a, pods("get", "team-a")))
	assert.Equal(t, auth.DecisionAllow, decide(t, a, pods("watch", "team-a")))
	assert.Equal(t, auth.DecisionNoOpinion, decide(t, a, pods("list", "team-b")))
	assert.Equal(t, auth.DecisionNoOpinion, decide(t, a, pods("list", "")))
	assert.Equal(t, auth.DecisionNoOpinion, decide(t, a, pods("create", "team-a")))
	assert.Equal(t, auth.DecisionNoOpinion, decide(t, a, pods("delete", "team-a")))
	secrets := pods("get", "team-a")
	secrets.Resource = "secrets"
	assert.Equal(t, auth.DecisionNoOpinion, decide(t, a, secrets), "view does not read secrets")

	// Every authenticated user may discover and review itself.
	assert.Equal(t, auth.DecisionAllow, decide(t, a, auth.Attributes{User: jane, Verb: "get", Path: "/apis/apps/v1"}))
	assert.Equal(t, auth.DecisionAllow, decide(t, a, auth.Attributes{User: jane, ResourceRequest: true, Verb: "create",
		APIGroup: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}))
	anon := &auth.DefaultUser{Name: auth.UserAnonymous, Groups: []string{auth.GroupUnauthenticated}}
	assert.Equal(t, auth.DecisionAllow, decide(t, a, auth.Attributes{User: anon, Verb: "get", Path: "/version"}))
	assert.Equal(t, auth.DecisionNoOpinion, decide(t, a, auth.Attributes{User: anon, Verb: "get", Path: "/api"}))

	// Removing the binding takes the access away.
	_, err := st.Delete(context.Background(), storage.Key(RoleBindingsGR, "team-a", "jane-view"), nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return decide(t, a, pods("list", "team-a")) == auth.DecisionNoOpinion }, 30*time.Second, 20*time.Millisecond)
}

func TestClusterAdminAndMissingRole(t *testing.T) {
	a, st := startRBAC(t)
	admin := &auth.DefaultUser{Name: "root", Groups: []string{auth.GroupMasters}}
	assert.Equal(t, auth.DecisionAllow, decide(t, a, auth.Attributes{User: admin, ResourceRequest: true, Verb: "delete", APIGroup: "apps", Resource: "deployments", Namespace: "x", Name: "y"}))
	assert.Equal(t, auth.DecisionAllow, decide(t, a, auth.Attributes{User: admin, Verb: "post", Path: "/anything"}))

	bob := &auth.DefaultUser{Name: "bob"}
	create(t, st, storage.Key(ClusterRoleBindingsGR, "", "bob"), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bob"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "does-not-exist"},
		Subjects:   []rbacv1.Subject{user("bob")},
	})
	require.Eventually(t, func() bool {
		_, reason, _ := a.Authorize(context.Background(), auth.Attributes{User: bob, ResourceRequest: true, Verb: "get", Resource: "pods", Namespace: "x"})
		return reason == `RBAC: clusterrole.rbac.authorization.k8s.io "does-not-exist" not found`
	}, 30*time.Second, 20*time.Millisecond)
}

func TestRoleAndAggregation(t *testing.T) {
	a, st := startRBAC(t)
	ci := &auth.DefaultUser{Name: "system:serviceaccount:ci:deployer", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ci"}}
	create(t, st, storage.Key(RolesGR, "ci", "deploy"), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "deploy"},
		Rules:      rules(rule("update", "patch").groups("apps").resources("deployments").names("web")),
	})
	create(t, st, storage.Key(RoleBindingsGR, "ci", "deploy"), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "deploy"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "deploy"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "deployer"}},
	})
	dep := func(verb, name string) auth.Attributes {
		return auth.Attributes{User: ci, ResourceRequest: true, Verb: verb, APIGroup: "apps", Resource: "deployments", Namespace: "ci", Name: name}
	}
	require.Eventually(t, func() bool { return decide(t, a, dep("patch", "web")) == auth.DecisionAllow }, 30*time.Second, 20*time.Millisecond)
	assert.Equal(t, auth.DecisionNoOpinion, decide(t, a, dep("patch", "db")))

	// A new ClusterRole labelled aggregate-to-view extends view (and so
	// edit and admin) without touching them.
	create(t, st, storage.Key(ClusterRolesGR, "", "widgets-view"), &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets-view", Labels: map[string]string{AggregateToView: "true"}},
		Rules:      rules(rule("get", "list").groups("example.com").resources("widgets")),
	})
	require.Eventually(t, func() bool {
		obj, err := st.Get(context.Background(), storage.Key(ClusterRolesGR, "", "admin"))
		return err == nil && containsRule(obj.(*rbacv1.ClusterRole).Rules, rules(rule("get", "list").groups("example.com").resources("widgets"))[0])
	}, 30*time.Second, 20*time.Millisecond)
	res, _, incomplete, err := a.RulesFor(context.Background(), ci, "ci")
	require.NoError(t, err)
	assert.False(t, incomplete)
	assert.Contains(t, res, authz.ResourceRule{Verbs: []string{"update", "patch"}, APIGroups: []string{"apps"},
		Resources: []string{"deployments"}, ResourceNames: []string{"web"}})
}

func TestReconcileKeepsAdditionsAndRespectsAutoupdate(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	require.NoError(t, Reconcile(ctx, st, slog.New(slog.DiscardHandler)))
	key := storage.Key(ClusterRoleBindingsGR, "", "system:basic-user")
	_, err := st.Update(ctx, key, func(cur runtime.Object) (runtime.Object, error) {
		b := cur.(*rbacv1.ClusterRoleBinding).DeepCopy()
		b.Subjects = append(b.Subjects, user("extra"))
		return b, nil
	})
	require.NoError(t, err)
	keyRole := storage.Key(ClusterRolesGR, "", "system:node-proxier")
	_, err = st.Update(ctx, keyRole, func(cur runtime.Object) (runtime.Object, error) {
		r := cur.(*rbacv1.ClusterRole).DeepCopy()
		r.Annotations[AutoUpdateAnnotation] = "false"
		r.Rules = nil
		return r, nil
	})
	require.NoError(t, err)
	require.NoError(t, Reconcile(ctx, st, slog.New(slog.DiscardHandler)))
	obj, err := st.Get(ctx, key)
	require.NoError(t, err)
	assert.Contains(t, obj.(*rbacv1.ClusterRoleBinding).Subjects, user("extra"))
	assert.Contains(t, obj.(*rbacv1.ClusterRoleBinding).Subjects, group(auth.GroupAuthenticated))
	obj, err = st.Get(ctx, keyRole)
	require.NoError(t, err)
	assert.Empty(t, obj.(*rbacv1.ClusterRole).Rules, "autoupdate=false is left alone")
}
