package rbac

import rbacv1 "k8s.io/api/rbac/v1"

// Verb sets of the bootstrap policy.
var (
	readVerbs      = []string{"get", "list", "watch"}
	readWriteVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	writeVerbs     = []string{"create", "update", "patch", "delete", "deletecollection"}
)

// API groups named by the bootstrap policy.
const (
	legacyGroup         = ""
	appsGroup           = "apps"
	authenticationGroup = "authentication.k8s.io"
	authorizationGroup  = "authorization.k8s.io"
	autoscalingGroup    = "autoscaling"
	batchGroup          = "batch"
	certificatesGroup   = "certificates.k8s.io"
	coordinationGroup   = "coordination.k8s.io"
	discoveryGroup      = "discovery.k8s.io"
	eventsGroup         = "events.k8s.io"
	networkingGroup     = "networking.k8s.io"
	nodeGroup           = "node.k8s.io"
	policyGroup         = "policy"
	rbacGroup           = "rbac.authorization.k8s.io"
	schedulingGroup     = "scheduling.k8s.io"
	storageGroup        = "storage.k8s.io"
	admissionGroup      = "admissionregistration.k8s.io"
)

// ruleBuilder builds a PolicyRule fluently: rule("get").groups("").resources("pods").
type ruleBuilder struct{ r rbacv1.PolicyRule }

func rule(verbs ...string) *ruleBuilder {
	return &ruleBuilder{r: rbacv1.PolicyRule{Verbs: verbs}}
}

func (b *ruleBuilder) groups(g ...string) *ruleBuilder    { b.r.APIGroups = g; return b }
func (b *ruleBuilder) resources(r ...string) *ruleBuilder { b.r.Resources = r; return b }
func (b *ruleBuilder) names(n ...string) *ruleBuilder     { b.r.ResourceNames = n; return b }
func (b *ruleBuilder) urls(u ...string) *ruleBuilder      { b.r.NonResourceURLs = u; return b }
func (b *ruleBuilder) build() rbacv1.PolicyRule           { return b.r }

func rules(bs ...*ruleBuilder) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(bs))
	for i, b := range bs {
		out[i] = b.build()
	}
	return out
}

// eventsRule lets a component record events in both event APIs.
func eventsRules() []*ruleBuilder {
	return []*ruleBuilder{
		rule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events"),
	}
}
