package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/auth"
)

// Labels and annotations of the bootstrap policy, as Kubernetes sets them.
const (
	// BootstrappingLabel marks the default objects (value "rbac-defaults").
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	// AutoUpdateAnnotation set to "false" stops reconciliation from adding
	// rules or subjects to a default object.
	AutoUpdateAnnotation = "rbac.authorization.kubernetes.io/autoupdate"
	// Aggregation labels: a ClusterRole carrying one has its rules added to
	// admin, edit or view.
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// Well-known users and groups of the control plane.
const (
	UserKubeControllerManager = "system:kube-controller-manager"
	UserKubeScheduler         = "system:kube-scheduler"
	UserKubeProxy             = "system:kube-proxy"
	GroupNodes                = "system:nodes"
	GroupMonitoring           = "system:monitoring"
	GroupServiceAccounts      = "system:serviceaccounts"
)

func bootstrapMeta(name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{BootstrappingLabel: "rbac-defaults"}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{AutoUpdateAnnotation: "true"}}
}

func clusterRole(name string, labels map[string]string, rs ...*ruleBuilder) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: bootstrapMeta(name, labels), Rules: rules(rs...)}
}

func aggregated(name string, labels map[string]string, selector string) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{
		ObjectMeta: bootstrapMeta(name, labels),
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{selector: "true"}},
		}},
	}
}

// BootstrapClusterRoles returns the default ClusterRoles: Kubernetes'
// bootstrap policy for the resources podkit serves (and those it will),
// with the aggregated admin/edit/view left empty for aggregation to fill.
func BootstrapClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		clusterRole("cluster-admin", nil,
			rule("*").groups("*").resources("*"),
			rule("*").urls("*")),
		clusterRole("system:discovery", nil,
			rule("get").urls("/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/")),
		clusterRole("system:monitoring", nil,
			rule("get").urls("/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*")),
		clusterRole("system:basic-user", nil,
			rule("create").groups(authorizationGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule("create").groups(authenticationGroup).resources("selfsubjectreviews")),
		clusterRole("system:public-info-viewer", nil,
			rule("get").urls("/healthz", "/livez", "/readyz", "/version", "/version/")),
		aggregated("admin", nil, AggregateToAdmin),
		aggregated("edit", map[string]string{AggregateToAdmin: "true"}, AggregateToEdit),
		aggregated("view", map[string]string{AggregateToEdit: "true"}, AggregateToView),
		clusterRole("system:aggregate-to-admin", map[string]string{AggregateToAdmin: "true"},
			rule("create").groups(authorizationGroup).resources("localsubjectaccessreviews"),
			rule(readWriteVerbs...).groups(rbacGroup).resources("rolebindings", "roles")),
		clusterRole("system:aggregate-to-edit", map[string]string{AggregateToEdit: "true"}, editRules()...),
		clusterRole("system:aggregate-to-view", map[string]string{AggregateToView: "true"}, viewRules()...),
		clusterRole("system:heapster", nil,
			rule(readVerbs...).groups(legacyGroup).resources("events", "pods", "nodes", "namespaces"),
			rule(readVerbs...).groups(appsGroup).resources("deployments")),
		clusterRole("system:node", nil, NodeRules()...),
		clusterRole("system:node-problem-detector", nil,
			rule("get").groups(legacyGroup).resources("nodes"),
			rule("patch").groups(legacyGroup).resources("nodes/status"),
			rule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events")),
		clusterRole("system:kubelet-api-admin", nil,
			rule("get", "list", "watch", "proxy").groups(legacyGroup).resources("nodes"),
			rule("*").groups(legacyGroup).resources("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log")),
		clusterRole("system:node-bootstrapper", nil,
			rule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests")),
		clusterRole("system:auth-delegator", nil,
			rule("create").groups(authenticationGroup).resources("tokenreviews"),
			rule("create").groups(authorizationGroup).resources("subjectaccessreviews")),
		clusterRole("system:kube-aggregator", nil,
			rule(readVerbs...).groups(legacyGroup).resources("services", "endpoints")),
		clusterRole("system:kube-controller-manager", nil, controllerManagerRules()...),
		clusterRole("system:kube-dns", nil,
			rule("list", "watch").groups(legacyGroup).resources("endpoints", "services"),
			rule("list", "watch").groups(discoveryGroup).resources("endpointslices")),
		clusterRole("system:persistent-volume-provisioner", nil,
			rule("get", "list", "watch", "create", "delete").groups(legacyGroup).resources("persistentvolumes"),
			rule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumeclaims"),
			rule(readVerbs...).groups(storageGroup).resources("storageclasses"),
			rule("watch").groups(legacyGroup).resources("events"),
			rule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events")),
		clusterRole("system:kube-scheduler", nil, SchedulerRules()...),
		clusterRole("system:volume-scheduler", nil,
			rule(readVerbs...).groups(legacyGroup).resources("persistentvolumes"),
			rule(readVerbs...).groups(storageGroup).resources("storageclasses"),
			rule("patch", "update").groups(legacyGroup).resources("persistentvolumeclaims")),
		clusterRole("system:node-proxier", nil,
			rule("list", "watch").groups(legacyGroup).resources("services", "endpoints"),
			rule("get", "list", "watch").groups(legacyGroup).resources("nodes"),
			rule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events"),
			rule("list", "watch").groups(discoveryGroup).resources("endpointslices")),
		podkitNodeServicesRole(),
		clusterRole("system:service-account-issuer-discovery", nil,
			rule("get").urls("/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/")),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient", nil,
			rule("create").groups(certificatesGroup).resources("certificatesigningrequests/nodeclient")),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", nil,
			rule("create").groups(certificatesGroup).resources("certificatesigningrequests/selfnodeclient")),
	}
	return roles
}

func clusterBinding(role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: bootstrapMeta(role, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func serviceAccount(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

// BootstrapClusterRoleBindings returns the default ClusterRoleBindings.
// system:node is bound to nobody, as in Kubernetes: nodes get their
// access from the Node authorizer, which applies the same rules to a
// node's own objects only.
func BootstrapClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return []rbacv1.ClusterRoleBinding{
		clusterBinding("cluster-admin", group(auth.GroupMasters)),
		clusterBinding("system:monitoring", group(GroupMonitoring)),
		clusterBinding("system:discovery", group(auth.GroupAuthenticated)),
		clusterBinding("system:basic-user", group(auth.GroupAuthenticated)),
		clusterBinding("system:public-info-viewer", group(auth.GroupAuthenticated), group(auth.GroupUnauthenticated)),
		clusterBinding("system:node-proxier", user(UserKubeProxy)),
		clusterBinding("system:kube-controller-manager", user(UserKubeControllerManager)),
		clusterBinding("system:kube-dns", serviceAccount("kube-system", "kube-dns")),
		clusterBinding("system:kube-scheduler", user(UserKubeScheduler)),
		clusterBinding("system:volume-scheduler", user(UserKubeScheduler)),
		clusterBinding("system:node"),
		clusterBinding("system:service-account-issuer-discovery", group(GroupServiceAccounts)),
		podkitNodeProxierBinding(),
	}
}

// PodkitNodeServices names podkit's own grants to nodes: a podkit node runs
// its service proxy and its node-local cluster DNS itself (there is no
// separate kube-proxy or CoreDNS identity), so the group system:nodes may
// list and watch Services, Endpoints and EndpointSlices cluster-wide (the
// reads of system:node-proxier, without its node reads: the Node
// authorizer keeps a node to its own Node object), and in kube-system may
// publish the kube-dns Service and the EndpointSlices behind it (each node
// its own slice). Kubernetes' bootstrap policy has neither grant.
const PodkitNodeServices = "podkit:node-services"

func podkitNodeServicesRole() rbacv1.ClusterRole {
	return clusterRole(PodkitNodeServices, nil,
		rule("list", "watch").groups(legacyGroup).resources("services", "endpoints"),
		rule("list", "watch").groups(discoveryGroup).resources("endpointslices"))
}

func podkitNodeProxierBinding() rbacv1.ClusterRoleBinding {
	return clusterBinding(PodkitNodeServices, group(GroupNodes))
}

// BootstrapRoles returns the default namespaced Roles (kube-system).
func BootstrapRoles() []rbacv1.Role {
	role := func(ns, name string, rs ...*ruleBuilder) rbacv1.Role {
		m := bootstrapMeta(name, nil)
		m.Namespace = ns
		return rbacv1.Role{ObjectMeta: m, Rules: rules(rs...)}
	}
	return []rbacv1.Role{
		role("kube-system", "extension-apiserver-authentication-reader",
			rule(readVerbs...).groups(legacyGroup).resources("configmaps").names("extension-apiserver-authentication")),
		role("kube-system", "system::leader-locking-kube-controller-manager",
			rule("watch").groups(legacyGroup).resources("configmaps"),
			rule("get", "update").groups(legacyGroup).resources("configmaps").names("kube-controller-manager")),
		role("kube-system", "system::leader-locking-kube-scheduler",
			rule("watch").groups(legacyGroup).resources("configmaps"),
			rule("get", "update").groups(legacyGroup).resources("configmaps").names("kube-scheduler")),
		role("kube-system", PodkitNodeServices,
			rule("create").groups(legacyGroup).resources("services"),
			rule("get", "update", "patch").groups(legacyGroup).resources("services").names("kube-dns"),
			rule("get", "list", "watch", "create", "update", "patch", "delete").groups(discoveryGroup).resources("endpointslices")),
	}
}

// BootstrapRoleBindings returns the default namespaced RoleBindings.
func BootstrapRoleBindings() []rbacv1.RoleBinding {
	binding := func(ns, name, role string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
		m := bootstrapMeta(name, nil)
		m.Namespace = ns
		return rbacv1.RoleBinding{ObjectMeta: m, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role}, Subjects: subjects}
	}
	return []rbacv1.RoleBinding{
		binding("kube-system", "system::extension-apiserver-authentication-reader", "extension-apiserver-authentication-reader",
			user(UserKubeControllerManager), user(UserKubeScheduler)),
		binding("kube-system", "system::leader-locking-kube-controller-manager", "system::leader-locking-kube-controller-manager",
			user(UserKubeControllerManager), serviceAccount("kube-system", "kube-controller-manager")),
		binding("kube-system", "system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
			user(UserKubeScheduler), serviceAccount("kube-system", "kube-scheduler")),
		binding("kube-system", PodkitNodeServices, PodkitNodeServices, group(GroupNodes)),
	}
}
