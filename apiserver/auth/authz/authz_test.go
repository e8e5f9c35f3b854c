package authz_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/authz"
)

func fixed(d auth.Decision, reason string, err error) auth.Authorizer {
	return auth.AuthorizerFunc(func(context.Context, auth.Attributes) (auth.Decision, string, error) { return d, reason, err })
}

func TestUnion(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name   string
		chain  []auth.Authorizer
		want   auth.Decision
		reason string
		err    bool
	}{
		{"empty", nil, auth.DecisionNoOpinion, "", false},
		{"first allow wins", []auth.Authorizer{fixed(auth.DecisionAllow, "", nil), fixed(auth.DecisionDeny, "no", nil)}, auth.DecisionAllow, "", false},
		{"first deny wins", []auth.Authorizer{fixed(auth.DecisionNoOpinion, "", nil), fixed(auth.DecisionDeny, "no", nil), fixed(auth.DecisionAllow, "", nil)}, auth.DecisionDeny, "no", false},
		{"no opinion joins reasons", []auth.Authorizer{fixed(auth.DecisionNoOpinion, "a", nil), fixed(auth.DecisionNoOpinion, "b", nil)}, auth.DecisionNoOpinion, "a\nb", false},
		{"error then allow", []auth.Authorizer{fixed(auth.DecisionNoOpinion, "", boom), fixed(auth.DecisionAllow, "", nil)}, auth.DecisionAllow, "", false},
		{"error and no decision", []auth.Authorizer{fixed(auth.DecisionNoOpinion, "", boom)}, auth.DecisionNoOpinion, "", true},
		{"always deny", []auth.Authorizer{authz.AlwaysDeny()}, auth.DecisionNoOpinion, "Everything is forbidden.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, err := authz.Union(tt.chain...).Authorize(context.Background(), auth.Attributes{})
			assert.Equal(t, tt.want, d)
			assert.Equal(t, tt.reason, reason)
			assert.Equal(t, tt.err, err != nil)
		})
	}
}

func TestForbidden(t *testing.T) {
	jane := &auth.DefaultUser{Name: "jane"}
	tests := []struct {
		attrs  auth.Attributes
		reason string
		want   string
	}{
		{auth.Attributes{User: jane, ResourceRequest: true, Verb: "list", Resource: "pods", Namespace: "default"}, "",
			`pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default"`},
		{auth.Attributes{User: jane, ResourceRequest: true, Verb: "get", APIGroup: "apps", Resource: "deployments", Subresource: "scale", Namespace: "x", Name: "web"}, "",
			`deployments.apps "web" is forbidden: User "jane" cannot get resource "deployments/scale" in API group "apps" in the namespace "x"`},
		{auth.Attributes{User: jane, ResourceRequest: true, Verb: "delete", Resource: "nodes", Name: "n"}, "because",
			`nodes "n" is forbidden: User "jane" cannot delete resource "nodes" in API group "" at the cluster scope: because`},
		{auth.Attributes{User: jane, Verb: "get", Path: "/metrics"}, "",
			`forbidden: User "jane" cannot get path "/metrics"`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, authz.Forbidden(tt.attrs, tt.reason).Error())
	}
}

func TestPrivileged(t *testing.T) {
	d, _, _ := authz.Privileged().Authorize(context.Background(), auth.Attributes{User: &auth.DefaultUser{Name: "x", Groups: []string{auth.GroupMasters}}})
	assert.Equal(t, auth.DecisionAllow, d)
	d, _, _ = authz.Privileged().Authorize(context.Background(), auth.Attributes{User: &auth.DefaultUser{Name: "x"}})
	assert.Equal(t, auth.DecisionNoOpinion, d)
}

func TestWebhook(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var sar authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ra := sar.Spec.ResourceAttributes
		switch {
		case sar.Spec.User == "jane" && ra != nil && ra.Verb == "get":
			sar.Status.Allowed = true
		case sar.Spec.User == "mallory":
			sar.Status.Denied, sar.Status.Reason = true, "mallory is banned"
		default:
			sar.Status.Reason = "not listed"
		}
		_ = json.NewEncoder(w).Encode(&sar)
	}))
	defer srv.Close()
	now := time.Unix(1000, 0)
	w, err := authz.NewWebhook(authz.WebhookConfig{URL: srv.URL, Clock: func() time.Time { return now }})
	require.NoError(t, err)
	ctx := context.Background()
	get := auth.Attributes{User: &auth.DefaultUser{Name: "jane"}, ResourceRequest: true, Verb: "get", Resource: "pods", Namespace: "d"}
	d, _, err := w.Authorize(ctx, get)
	require.NoError(t, err)
	assert.Equal(t, auth.DecisionAllow, d)
	d, _, _ = w.Authorize(ctx, get)
	assert.Equal(t, auth.DecisionAllow, d)
	assert.Equal(t, int32(1), calls.Load(), "the second answer came from the cache")
	now = now.Add(authz.DefaultWebhookAllowTTL + time.Second)
	_, _, _ = w.Authorize(ctx, get)
	assert.Equal(t, int32(2), calls.Load(), "the cache entry expired")

	d, reason, _ := w.Authorize(ctx, auth.Attributes{User: &auth.DefaultUser{Name: "mallory"}, Verb: "get", Path: "/x"})
	assert.Equal(t, auth.DecisionDeny, d)
	assert.Equal(t, "mallory is banned", reason)
	d, reason, _ = w.Authorize(ctx, auth.Attributes{User: &auth.DefaultUser{Name: "bob"}, Verb: "get", Path: "/x"})
	assert.Equal(t, auth.DecisionNoOpinion, d)
	assert.Equal(t, "not listed", reason)

	srv.Close()
	d, _, err = w.Authorize(ctx, auth.Attributes{User: &auth.DefaultUser{Name: "carol"}, Verb: "get", Path: "/x"})
	assert.Equal(t, auth.DecisionNoOpinion, d)
	assert.Error(t, err, "a failed call is an error, never an allow")
}

// ExampleUnion shows kube-apiserver's default shape: system:masters
// first, then the configured modes; the first to decide wins.
func ExampleUnion() {
	readOnly := auth.AuthorizerFunc(func(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
		if a.Verb == "get" || a.Verb == "list" || a.Verb == "watch" {
			return auth.DecisionAllow, "", nil
		}
		return auth.DecisionNoOpinion, "read-only cluster", nil
	})
	chain := authz.Union(authz.Privileged(), readOnly)
	attrs := auth.Attributes{User: &auth.DefaultUser{Name: "jane"}, ResourceRequest: true, Verb: "create", Resource: "pods", Namespace: "default"}
	d, reason, _ := chain.Authorize(context.Background(), attrs)
	if d != auth.DecisionAllow {
		fmt.Println(authz.Forbidden(attrs, reason))
	}
	// Output: pods is forbidden: User "jane" cannot create resource "pods" in API group "" in the namespace "default": read-only cluster
}
