package rbac

import rbacv1 "k8s.io/api/rbac/v1"

// editRules are system:aggregate-to-edit's: read and write of the
// namespaced workload resources, without RBAC, quota or limits.
func editRules() []*ruleBuilder {
	return []*ruleBuilder{
		rule(readVerbs...).groups(legacyGroup).resources("pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"),
		rule("impersonate").groups(legacyGroup).resources("serviceaccounts"),
		rule(writeVerbs...).groups(legacyGroup).resources("pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"),
		rule("create").groups(legacyGroup).resources("pods/eviction"),
		rule(writeVerbs...).groups(legacyGroup).resources("configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
			"replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy"),
		rule("create").groups(legacyGroup).resources("serviceaccounts/token"),
		rule(writeVerbs...).groups(appsGroup).resources("daemonsets", "deployments", "deployments/rollback", "deployments/scale",
			"replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"),
		rule(writeVerbs...).groups(autoscalingGroup).resources("horizontalpodautoscalers"),
		rule(writeVerbs...).groups(batchGroup).resources("cronjobs", "jobs"),
		rule(writeVerbs...).groups("extensions").resources("daemonsets", "deployments", "deployments/rollback", "deployments/scale",
			"ingresses", "networkpolicies", "replicasets", "replicasets/scale", "replicationcontrollers/scale"),
		rule(writeVerbs...).groups(policyGroup).resources("poddisruptionbudgets"),
		rule(writeVerbs...).groups(networkingGroup).resources("ingresses", "networkpolicies"),
		rule(writeVerbs...).groups(coordinationGroup).resources("leases"),
	}
}

// viewRules are system:aggregate-to-view's: read-only access to the
// namespaced resources that do not escalate (no secrets).
func viewRules() []*ruleBuilder {
	return []*ruleBuilder{
		rule(readVerbs...).groups(legacyGroup).resources("pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
		rule(readVerbs...).groups(legacyGroup).resources("limitranges", "resourcequotas", "bindings", "events",
			"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log"),
		rule(readVerbs...).groups(legacyGroup).resources("namespaces"),
		rule(readVerbs...).groups(discoveryGroup).resources("endpointslices"),
		rule(readVerbs...).groups(appsGroup).resources("controllerrevisions", "daemonsets", "daemonsets/status", "deployments",
			"deployments/scale", "deployments/status", "replicasets", "replicasets/scale", "replicasets/status",
			"statefulsets", "statefulsets/scale", "statefulsets/status"),
		rule(readVerbs...).groups(autoscalingGroup).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		rule(readVerbs...).groups(batchGroup).resources("cronjobs", "cronjobs/status", "jobs", "jobs/status"),
		rule(readVerbs...).groups("extensions").resources("daemonsets", "daemonsets/status", "deployments", "deployments/scale",
			"deployments/status", "ingresses", "ingresses/status", "networkpolicies", "replicasets", "replicasets/scale",
			"replicasets/status", "replicationcontrollers/scale"),
		rule(readVerbs...).groups(policyGroup).resources("poddisruptionbudgets", "poddisruptionbudgets/status"),
		rule(readVerbs...).groups(networkingGroup).resources("ingresses", "ingresses/status", "networkpolicies"),
		rule(readVerbs...).groups(coordinationGroup).resources("leases"),
	}
}

// NodeRules are system:node's rules: what a kubelet needs. The Node
// authorizer applies them to nodes (restricting secrets, config maps,
// volumes and tokens to the node's own pods first) and NodeRestriction
// admission confines the writes to the node's own objects.
func NodeRules() []*ruleBuilder {
	return []*ruleBuilder{
		rule("create").groups(authenticationGroup).resources("tokenreviews"),
		rule("create").groups(authorizationGroup).resources("subjectaccessreviews", "localsubjectaccessreviews"),
		rule(readVerbs...).groups(legacyGroup).resources("services"),
		rule("create", "get", "list", "watch").groups(legacyGroup).resources("nodes"),
		rule("update", "patch").groups(legacyGroup).resources("nodes/status"),
		rule("update", "patch").groups(legacyGroup).resources("nodes"),
		rule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events"),
		rule(readVerbs...).groups(legacyGroup).resources("pods"),
		rule("create", "delete").groups(legacyGroup).resources("pods"),
		rule("update", "patch").groups(legacyGroup).resources("pods/status"),
		rule("create").groups(legacyGroup).resources("pods/eviction"),
		rule(readVerbs...).groups(legacyGroup).resources("secrets", "configmaps"),
		rule("get").groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes"),
		rule("get").groups(legacyGroup).resources("endpoints"),
		rule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests"),
		rule("get", "create", "update", "patch", "delete").groups(coordinationGroup).resources("leases"),
		rule("get").groups(storageGroup).resources("volumeattachments"),
		rule("create").groups(legacyGroup).resources("serviceaccounts/token"),
		rule("get", "update", "patch").groups(legacyGroup).resources("persistentvolumeclaims/status"),
		rule("get", "create", "update", "patch", "delete").groups(storageGroup).resources("csinodes"),
		rule(readVerbs...).groups(storageGroup).resources("csidrivers"),
		rule(readVerbs...).groups(nodeGroup).resources("runtimeclasses"),
	}
}

// NodePolicyRules are NodeRules as PolicyRules.
func NodePolicyRules() []rbacv1.PolicyRule { return rules(NodeRules()...) }

// SchedulerRules are system:kube-scheduler's rules.
func SchedulerRules() []*ruleBuilder {
	return append(eventsRules(),
		rule("create").groups(coordinationGroup).resources("leases"),
		rule("get", "update").groups(coordinationGroup).resources("leases").names("kube-scheduler"),
		rule(readVerbs...).groups(legacyGroup).resources("nodes"),
		rule("get", "list", "watch", "delete").groups(legacyGroup).resources("pods"),
		rule("create").groups(legacyGroup).resources("pods/binding", "bindings"),
		rule("patch", "update").groups(legacyGroup).resources("pods/status"),
		rule(readVerbs...).groups(legacyGroup).resources("services", "replicationcontrollers"),
		rule(readVerbs...).groups(appsGroup, "extensions").resources("replicasets"),
		rule(readVerbs...).groups(appsGroup).resources("statefulsets"),
		rule(readVerbs...).groups(policyGroup).resources("poddisruptionbudgets"),
		rule(readVerbs...).groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes"),
		rule("create").groups(authenticationGroup).resources("tokenreviews"),
		rule("create").groups(authorizationGroup).resources("subjectaccessreviews"),
		rule(readVerbs...).groups(storageGroup).resources("csinodes", "csidrivers", "csistoragecapacities", "storageclasses"),
		rule(readVerbs...).groups(legacyGroup).resources("namespaces"),
		rule(readVerbs...).groups(schedulingGroup).resources("priorityclasses"),
	)
}

// controllerManagerRules are kube-controller-manager's bootstrap rules
// plus those of every controller podkit's controller manager runs under
// that one identity: deployment, replicaset, job, garbage collector,
// namespace, service account, node lifecycle, endpoints and endpoint
// slices.
func controllerManagerRules() []*ruleBuilder {
	return append(eventsRules(),
		// kube-controller-manager's own bootstrap rules.
		rule("create").groups(coordinationGroup).resources("leases"),
		rule("get", "update").groups(coordinationGroup).resources("leases").names("kube-controller-manager"),
		rule("create").groups(legacyGroup).resources("secrets", "serviceaccounts"),
		rule("delete").groups(legacyGroup).resources("secrets"),
		rule("get").groups(legacyGroup).resources("namespaces", "secrets", "serviceaccounts", "configmaps"),
		rule("update").groups(legacyGroup).resources("secrets", "serviceaccounts"),
		rule("create").groups(authenticationGroup).resources("tokenreviews"),
		rule("create").groups(authorizationGroup).resources("subjectaccessreviews"),
		rule("list", "watch").groups("*").resources("*"),
		rule("create").groups(legacyGroup).resources("serviceaccounts/token"),
		// garbage collector: reads and deletes dependents of any kind,
		// removes finalizers and owner references.
		rule("get", "list", "watch", "patch", "update", "delete").groups("*").resources("*"),
		// namespace controller: empties and finalizes namespaces.
		rule("get", "list", "watch", "delete", "deletecollection").groups("*").resources("*"),
		rule("update").groups(legacyGroup).resources("namespaces/finalize", "namespaces/status"),
		// deployment, replicaset and job controllers.
		rule("get", "list", "watch", "update", "patch").groups(appsGroup).resources("deployments", "replicasets"),
		rule("create", "delete").groups(appsGroup).resources("replicasets"),
		rule("update").groups(appsGroup).resources("deployments/status", "deployments/finalizers", "replicasets/status", "replicasets/finalizers"),
		rule("get", "list", "watch", "update", "patch").groups(batchGroup).resources("jobs"),
		rule("update", "patch").groups(batchGroup).resources("jobs/status", "jobs/finalizers"),
		rule("create", "delete", "patch", "update").groups(legacyGroup).resources("pods"),
		// node lifecycle: taints, conditions, evictions, lease reads.
		rule("get", "update", "patch", "delete").groups(legacyGroup).resources("nodes"),
		rule("patch", "update").groups(legacyGroup).resources("nodes/status", "pods/status"),
		rule(readVerbs...).groups(coordinationGroup).resources("leases"),
		// endpoints and endpoint slices.
		rule("get", "create", "update", "delete").groups(legacyGroup).resources("endpoints", "endpoints/restricted"),
		rule("get", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices"),
		rule("get").groups(legacyGroup).resources("services", "pods", "nodes"),
		// service accounts.
		rule("get", "create").groups(legacyGroup).resources("serviceaccounts"),
		// resource quota status.
		rule("update").groups(legacyGroup).resources("resourcequotas/status"),
	)
}
