package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodLessCommonFields(t *testing.T) {
	q := resource.MustParse
	runPodCases(t, []podCase{
		{"resource claims", func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr("gpu-tmpl")}, {Name: "gpu", ResourceClaimName: ptr("x")}, {Name: "both"}}
			p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}, {Name: "gpu"}, {Name: "nope"}}
		}, []want{dup("spec.resourceClaims[1].name"), inv("spec.resourceClaims[2]", "must specify one of"),
			dup("spec.containers[0].resources.claims[1]"), notFound("spec.containers[0].resources.claims[2]")}},
		{"pod-level resources", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": q("1"), "ephemeral-storage": q("1Gi")}}
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"cpu": q("2")}
		}, []want{notSup("spec.resources.limits[ephemeral-storage]"), inv("spec.containers[0].resources.limits[cpu]", "must be less than or equal to pod limits of 1")}},
		{"volume devices", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "blk", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "blk", DevicePath: "/dev/xvda"}, {Name: "tmp", DevicePath: "/dev/../x"}, {Name: "none"}}
		}, []want{inv("spec.containers[0].volumeDevices[1].name", "PersistentVolumeClaim or Ephemeral"), inv("spec.containers[0].volumeDevices[1].devicePath", "backsteps"),
			notFound("spec.containers[0].volumeDevices[2].name"), req("spec.containers[0].volumeDevices[2].devicePath")}},
		{"downward API volume", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}},
				{Path: "ip", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}},
				{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}},
				{Path: "none"}}}}}}
		}, []want{notSup("spec.volumes[0].downwardAPI.items[1].fieldRef.fieldPath"), req("spec.volumes[0].downwardAPI.items[2].resourceFieldRef.containerName"),
			req("spec.volumes[0].downwardAPI.items[3]")}},
		{"recursive read-only needs readOnly", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "d", MountPath: "/d", RecursiveReadOnly: ptr(corev1.RecursiveReadOnlyEnabled)}}
		}, []want{forb("spec.containers[0].volumeMounts[0].recursiveReadOnly", "readOnly is true")}},
		{"user namespaces exclude host namespaces", func(p *corev1.Pod) { p.Spec.HostUsers, p.Spec.HostNetwork = ptr(false), true },
			[]want{forb("spec.hostNetwork", "`pod.Spec.HostUsers` is false")}},
		{"apparmor localhost needs profile", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost}}
		}, []want{req("spec.securityContext.appArmorProfile.localhostProfile")}},
		{"linux pod with windows options", func(p *corev1.Pod) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{}}
		}, []want{forb("spec.containers[0].securityContext.windowsOptions", "linux pod")}},
		{"env file key ref", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "cfg", Path: "/abs", Key: "K"}}}}
		}, []want{inv("spec.containers[0].env[0].valueFrom.fileKeyRef.path", "relative")}},
		{"envFrom secret name", func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{}}, {ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "Bad"}}}}
		}, []want{req("spec.containers[0].envFrom[0].secretRef.name"), inv("spec.containers[0].envFrom[1].configMapRef.name", "")}},
		{"host aliases", func(p *corev1.Pod) {
			p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"db.local", "Bad_Host"}}, {IP: "nope"}}
		}, []want{inv("spec.hostAliases[0].hostnames[1]", ""), inv("spec.hostAliases[1].ip", "")}},
		{"readiness and scheduling gates", func(p *corev1.Pod) {
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "not valid"}}
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}, {Name: "example.com/a"}}
		}, []want{inv("spec.readinessGates[0].conditionType", ""), dup("spec.schedulingGates[1]")}},
	})
}

func TestGatedPodNodeAffinityAdditions(t *testing.T) {
	req := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	old := storedPod()
	old.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
	old.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{req}}}}}}
	v := Default()

	added := old.DeepCopy()
	terms := added.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	terms[0].MatchExpressions = append(terms[0].MatchExpressions, corev1.NodeSelectorRequirement{Key: "disk", Operator: corev1.NodeSelectorOpExists})
	expectErrors(t, v.ValidateUpdate(added, old))

	mutated := old.DeepCopy()
	mutated.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"b"}
	expectErrors(t, v.ValidateUpdate(mutated, old),
		inv("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]", "only additions are allowed"))

	extraTerm := old.DeepCopy()
	ns := extraTerm.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req}})
	expectErrors(t, v.ValidateUpdate(extraTerm, old),
		inv("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", "no additions/deletions"))

	selectorChanged := old.DeepCopy()
	selectorChanged.Spec.NodeSelector = map[string]string{"a": "1"}
	old2 := old.DeepCopy()
	old2.Spec.NodeSelector = map[string]string{"a": "2"}
	expectErrors(t, v.ValidateUpdate(selectorChanged, old2), inv("spec.nodeSelector", "only additions to spec.nodeSelector are allowed"))
}

func TestServiceLoadBalancerClassImmutable(t *testing.T) {
	old := validService()
	old.ObjectMeta = storedMeta(old.ObjectMeta)
	old.Spec.Type = corev1.ServiceTypeLoadBalancer
	old.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	old.Spec.AllocateLoadBalancerNodePorts = ptr(true)
	old.Spec.LoadBalancerClass = ptr("example.com/lb")
	s := old.DeepCopy()
	s.Spec.LoadBalancerClass = ptr("example.com/other")
	expectErrors(t, Default().ValidateUpdate(s, old), inv("spec.loadBalancerClass", "may not change once set"))
	s.Spec.Type, s.Spec.AllocateLoadBalancerNodePorts, s.Spec.ExternalTrafficPolicy = corev1.ServiceTypeClusterIP, nil, ""
	expectErrors(t, Default().ValidateUpdate(s, old), forb("spec.loadBalancerClass", "may only be used when `type` is 'LoadBalancer'"))
}

func TestEndpointSliceHints(t *testing.T) {
	s := validEndpointSliceWithHints([]string{"zone-a", "zone-a", "Bad Zone"})
	expectErrors(t, Default().ValidateCreate(s), dup("endpoints[0].hints.forZones[1].name"), inv("endpoints[0].hints.forZones[2].name", ""))
}

func validEndpointSliceWithHints(zones []string) *discoveryv1.EndpointSlice {
	hints := &discoveryv1.EndpointHints{}
	for _, z := range zones {
		hints.ForZones = append(hints.ForZones, discoveryv1.ForZone{Name: z})
	}
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.9"}, Hints: hints}}}
}
