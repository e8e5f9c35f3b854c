package openapi

// The Kubernetes generator makes a field optional when its comment says
// +optional, required when it says +required, and otherwise optional
// exactly when its JSON tag has omitempty. Comments are invisible to
// reflection, so this package applies the omitempty rule alone, and these
// are the fields of the commonly served groups (core, apps, batch,
// coordination, discovery, events, rbac, autoscaling/v1, meta) where a
// marker says otherwise in k8s.io/api v0.37. A stale entry only changes
// what kubectl explain prints as -required-.
var requiredOverrides = map[string]bool{
	"io.k8s.api.core.v1.TypedObjectReference.apiGroup":                   false,
	"io.k8s.api.core.v1.TypedLocalObjectReference.apiGroup":              false,
	"io.k8s.api.core.v1.AzureFilePersistentVolumeSource.secretNamespace": false,
	"io.k8s.api.core.v1.ProjectedVolumeSource.sources":                   false,
	"io.k8s.api.core.v1.GRPCAction.service":                              false,
	"io.k8s.api.core.v1.NodeRuntimeHandler.name":                         false,
	"io.k8s.api.core.v1.ContainerImage.names":                            false,
	"io.k8s.api.core.v1.Event.reportingComponent":                        false,
	"io.k8s.api.core.v1.Event.reportingInstance":                         false,
	"io.k8s.api.core.v1.PodCertificateProjection.signerName":             true,
	"io.k8s.api.core.v1.PodCertificateProjection.keyType":                true,
	"io.k8s.api.core.v1.ImageVolumeStatus.imageRef":                      true,
	"io.k8s.api.core.v1.ContainerRestartRule.action":                     true,
	"io.k8s.api.core.v1.ContainerRestartRuleOnExitCodes.operator":        true,
	"io.k8s.api.apps.v1.Deployment.spec":                                 true,
	"io.k8s.api.apps.v1.ReplicaSet.spec":                                 true,
	"io.k8s.api.apps.v1.StatefulSet.spec":                                true,
	"io.k8s.api.apps.v1.DaemonSet.spec":                                  true,
	"io.k8s.api.apps.v1.DeploymentCondition.type":                        false,
	"io.k8s.api.apps.v1.DeploymentCondition.status":                      false,
	"io.k8s.api.apps.v1.ReplicaSetCondition.type":                        false,
	"io.k8s.api.apps.v1.ReplicaSetCondition.status":                      false,
	"io.k8s.api.apps.v1.StatefulSetCondition.type":                       false,
	"io.k8s.api.apps.v1.StatefulSetCondition.status":                     false,
	"io.k8s.api.apps.v1.DaemonSetCondition.type":                         false,
	"io.k8s.api.apps.v1.DaemonSetCondition.status":                       false,
	"io.k8s.api.apps.v1.StatefulSetOrdinals.start":                       false,
	"io.k8s.api.apps.v1.StatefulSetSpec.serviceName":                     false,
	"io.k8s.api.apps.v1.StatefulSetStatus.availableReplicas":             false,
	"io.k8s.api.apps.v1.ControllerRevision.revision":                     false,
	"io.k8s.api.batch.v1.CronJob.spec":                                   true,
	"io.k8s.api.batch.v1.PodFailurePolicyOnPodConditionsPattern.status":  false,
	"io.k8s.api.discovery.v1.EndpointSlice.endpoints":                    false,
	"io.k8s.api.discovery.v1.EndpointSlice.ports":                        false,
	"io.k8s.api.events.v1.Event.metadata":                                false,
	"io.k8s.api.rbac.v1.RoleRef.apiGroup":                                false,
	"io.k8s.api.rbac.v1.Role.rules":                                      false,
	"io.k8s.api.rbac.v1.ClusterRole.rules":                               false,
	"io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler.spec":             true,
}

// isRequired reports whether field name of struct t is required.
func isRequired(t, name string, omitempty bool) bool {
	if r, ok := requiredOverrides[t+"."+name]; ok {
		return r
	}
	return !omitempty
}
