package nodeauthz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/authz"
	"github.com/podkit/podkit/apiserver/auth/rbac"
	"github.com/podkit/podkit/apiserver/internal/storewatch"
	"github.com/podkit/podkit/apiserver/storage"
)

// NodeUserPrefix starts a node's user name; GroupNodes is nodes' group.
const (
	NodeUserPrefix = "system:node:"
	GroupNodes     = "system:nodes"
)

// NodeIdentity returns the node a user is, if it is one.
func NodeIdentity(u auth.User) (string, bool) {
	if u == nil || !strings.HasPrefix(u.GetName(), NodeUserPrefix) {
		return "", false
	}
	for _, g := range u.GetGroups() {
		if g == GroupNodes {
			return strings.TrimPrefix(u.GetName(), NodeUserPrefix), true
		}
	}
	return "", false
}

// Config configures the Node authorizer.
type Config struct {
	// Pods is where bound pods are watched (the API server's store).
	// Required.
	Pods storewatch.Source
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// SyncTimeout bounds how long Authorize waits for the first list of
	// pods after Run starts; default 30 seconds.
	SyncTimeout time.Duration
}

// Authorizer is the Node authorizer. Run must be running.
type Authorizer struct {
	cfg    Config
	graph  *graph
	rules  []rbacv1.PolicyRule
	synced *storewatch.Synced
}

var (
	_ auth.Authorizer = (*Authorizer)(nil)
	_ authz.Runner    = (*Authorizer)(nil)
)

// New builds a Node authorizer.
func New(cfg Config) (*Authorizer, error) {
	if cfg.Pods == nil {
		return nil, errors.New("nodeauthz: Config.Pods is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = 30 * time.Second
	}
	return &Authorizer{cfg: cfg, graph: newGraph(), rules: rbac.NodePolicyRules(), synced: storewatch.NewSynced()}, nil
}

// Run watches pods until ctx is done.
func (a *Authorizer) Run(ctx context.Context) {
	storewatch.Run(ctx, a.cfg.Pods, storage.Prefix(schema.GroupResource{Resource: "pods"}), a.graph,
		a.synced.Done, a.cfg.Logger, time.Second)
}

// WaitForSync waits for the first list of pods.
func (a *Authorizer) WaitForSync(ctx context.Context) error {
	return a.synced.Wait(ctx)
}

var noOpinion = auth.DecisionNoOpinion

// Authorize decides the requests of nodes.
func (a *Authorizer) Authorize(ctx context.Context, attrs auth.Attributes) (auth.Decision, string, error) {
	node, ok := NodeIdentity(attrs.User)
	if !ok {
		return noOpinion, "", nil
	}
	if node == "" {
		return noOpinion, "unknown node", nil
	}
	if !attrs.ResourceRequest {
		return a.byRules(attrs)
	}
	if attrs.APIGroup == corev1.GroupName || attrs.APIGroup == "coordination.k8s.io" {
		switch attrs.APIGroup + "/" + attrs.Resource {
		case "/secrets":
			return a.readReferenced(ctx, node, kindSecret, attrs)
		case "/configmaps":
			return a.readReferenced(ctx, node, kindConfigMap, attrs)
		case "/persistentvolumeclaims":
			if attrs.Subresource == "status" {
				if attrs.Verb != "update" && attrs.Verb != "patch" && attrs.Verb != "get" {
					return noOpinion, "can only get, update or patch persistentvolumeclaim status", nil
				}
				return a.related(ctx, node, kindPVC, attrs)
			}
			return a.readReferenced(ctx, node, kindPVC, attrs)
		case "/serviceaccounts":
			if attrs.Subresource != "token" {
				return noOpinion, "can only create token subresource of serviceaccount", nil
			}
			if attrs.Verb != "create" || attrs.Name == "" {
				return noOpinion, "can only create tokens for individual service accounts", nil
			}
			return a.related(ctx, node, kindServiceAccount, attrs)
		case "coordination.k8s.io/leases":
			return a.lease(node, attrs)
		case "/nodes":
			return a.ownNode(node, attrs)
		case "/pods":
			return a.pod(ctx, node, attrs)
		}
	}
	return a.byRules(attrs)
}

func (a *Authorizer) byRules(attrs auth.Attributes) (auth.Decision, string, error) {
	for i := range a.rules {
		if rbac.RuleAllows(attrs, &a.rules[i]) {
			return auth.DecisionAllow, "", nil
		}
	}
	return noOpinion, "", nil
}

func (a *Authorizer) waitSynced(ctx context.Context) error {
	if err := a.synced.WaitTimeout(ctx, a.cfg.SyncTimeout); err != nil {
		return fmt.Errorf("nodeauthz: the pod graph has not synced: %w", err)
	}
	return nil
}

// readReferenced allows get (and list/watch narrowed to one name) of an
// object a pod bound to node references.
func (a *Authorizer) readReferenced(ctx context.Context, node, kind string, attrs auth.Attributes) (auth.Decision, string, error) {
	switch attrs.Verb {
	case "get", "list", "watch":
	default:
		return noOpinion, "can only read resources of this type", nil
	}
	if attrs.Subresource != "" {
		return noOpinion, "cannot read subresource", nil
	}
	return a.related(ctx, node, kind, attrs)
}

func (a *Authorizer) related(ctx context.Context, node, kind string, attrs auth.Attributes) (auth.Decision, string, error) {
	if attrs.Name == "" {
		return noOpinion, "No Object name found", nil
	}
	if err := a.waitSynced(ctx); err != nil {
		return noOpinion, "", err
	}
	if a.graph.references(node, kind, attrs.Namespace, attrs.Name) {
		return auth.DecisionAllow, "", nil
	}
	return noOpinion, fmt.Sprintf("no relationship found between node '%s' and this object", node), nil
}

// lease allows a node its own Lease in kube-node-lease.
func (a *Authorizer) lease(node string, attrs auth.Attributes) (auth.Decision, string, error) {
	switch attrs.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return noOpinion, "can only get, create, update, patch, or delete a node lease", nil
	}
	if attrs.Namespace != corev1.NamespaceNodeLease {
		return noOpinion, fmt.Sprintf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease), nil
	}
	if attrs.Name != node && !(attrs.Verb == "create" && attrs.Name == "") {
		return noOpinion, "can only access node lease with the same name as the requesting node", nil
	}
	return auth.DecisionAllow, "", nil
}

// ownNode allows a node to register, list and watch nodes, and to read
// and write its own Node (and its status).
func (a *Authorizer) ownNode(node string, attrs auth.Attributes) (auth.Decision, string, error) {
	switch {
	case attrs.Verb == "create" && attrs.Subresource == "":
		return auth.DecisionAllow, "", nil
	case attrs.Verb == "list" || attrs.Verb == "watch":
		if attrs.Name != "" && attrs.Name != node {
			return noOpinion, "can only list or watch its own node object", nil
		}
		return auth.DecisionAllow, "", nil
	case attrs.Name != node:
		return noOpinion, fmt.Sprintf("node '%s' cannot access another node's object", node), nil
	}
	switch attrs.Verb {
	case "get", "update", "patch", "delete":
		if attrs.Subresource == "" || attrs.Subresource == "status" {
			return auth.DecisionAllow, "", nil
		}
	}
	return a.byRules(attrs)
}

// pod allows a node to list and watch pods, create and delete (mirror)
// pods — NodeRestriction confines those — and to get and write the status
// of the pods bound to it.
func (a *Authorizer) pod(ctx context.Context, node string, attrs auth.Attributes) (auth.Decision, string, error) {
	if attrs.Name == "" || attrs.Verb == "list" || attrs.Verb == "watch" || attrs.Verb == "create" {
		return a.byRules(attrs)
	}
	if err := a.waitSynced(ctx); err != nil {
		return noOpinion, "", err
	}
	if !a.graph.boundTo(node, attrs.Namespace, attrs.Name) {
		return noOpinion, fmt.Sprintf("no relationship found between node '%s' and this object", node), nil
	}
	return a.byRules(attrs)
}
