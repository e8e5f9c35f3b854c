package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type podCase struct {
	name   string
	mutate func(p *corev1.Pod)
	want   []want
}

func runPodCases(t *testing.T, cases []podCase) {
	t.Helper()
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := validPod()
			tc.mutate(p)
			expectErrors(t, v.ValidateCreate(p), tc.want...)
		})
	}
}

func TestPodCreateBasics(t *testing.T) {
	runPodCases(t, []podCase{
		{"valid", func(p *corev1.Pod) {}, nil},
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil }, []want{req("spec.containers")}},
		{"missing name and generateName", func(p *corev1.Pod) { p.Name = "" }, []want{req("metadata.name")}},
		{"missing namespace", func(p *corev1.Pod) { p.Namespace = "" }, []want{req("metadata.namespace")}},
		{"bad pod name", func(p *corev1.Pod) { p.Name = "Web_1" }, []want{inv("metadata.name", "RFC 1123 subdomain")}},
		{"dotted pod name ok", func(p *corev1.Pod) { p.Name = "web.v1" }, nil},
		{"container name not a label", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "App.1" }, []want{inv("spec.containers[0].name", "RFC 1123 label")}},
		{"container name empty", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "" }, []want{req("spec.containers[0].name")}},
		{"duplicate container names", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, validContainer("app"))
		}, []want{dup("spec.containers[1].name")}},
		{"init container name clashes with container", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{validContainer("app")}
		}, []want{dup("spec.initContainers[0].name")}},
		{"image required", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, []want{req("spec.containers[0].image")}},
		{"image whitespace", func(p *corev1.Pod) { p.Spec.Containers[0].Image = " nginx" }, []want{inv("spec.containers[0].image", "leading or trailing whitespace")}},
		{"image only whitespace", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "  " }, []want{inv("spec.containers[0].image", "whitespace")}},
		{"imagePullPolicy unset", func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "" }, []want{req("spec.containers[0].imagePullPolicy")}},
		{"imagePullPolicy bad", func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" }, []want{notSup("spec.containers[0].imagePullPolicy")}},
		{"terminationMessagePolicy bad", func(p *corev1.Pod) { p.Spec.Containers[0].TerminationMessagePolicy = "Log" }, []want{notSup("spec.containers[0].terminationMessagePolicy")}},
		{"terminationMessagePolicy unset", func(p *corev1.Pod) { p.Spec.Containers[0].TerminationMessagePolicy = "" }, []want{req("spec.containers[0].terminationMessagePolicy")}},
		{"restartPolicy bad", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, []want{notSup("spec.restartPolicy")}},
		{"restartPolicy unset", func(p *corev1.Pod) { p.Spec.RestartPolicy = "" }, []want{req("spec.restartPolicy")}},
		{"dnsPolicy bad", func(p *corev1.Pod) { p.Spec.DNSPolicy = "Google" }, []want{notSup("spec.dnsPolicy")}},
		{"dnsPolicy None needs config", func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone }, []want{req("spec.dnsConfig")}},
		{"dnsConfig ok", func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}, Searches: []string{"svc.cluster.local", "_ldap.example.com."}}
		}, nil},
		{"dnsConfig bad nameserver", func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"dns"}}
		}, []want{inv("spec.dnsConfig.nameservers[0]", "")}},
		{"grace period unset", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = nil }, []want{req("spec.terminationGracePeriodSeconds")}},
		{"restartable init container", func(p *corev1.Pod) {
			c := validContainer("proxy")
			c.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
			p.Spec.InitContainers = []corev1.Container{c}
		}, nil},
		{"init container restartPolicy Never", func(p *corev1.Pod) {
			c := validContainer("init")
			c.RestartPolicy = ptr(corev1.ContainerRestartPolicyNever)
			p.Spec.InitContainers = []corev1.Container{c}
		}, []want{notSup("spec.initContainers[0].restartPolicy")}},
		{"regular container restartPolicy", func(p *corev1.Pod) {
			p.Spec.Containers[0].RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
		}, []want{forb("spec.containers[0].restartPolicy", "non-init containers")}},
		{"plain init container with probe", func(p *corev1.Pod) {
			c := validContainer("init")
			c.LivenessProbe = &corev1.Probe{}
			p.Spec.InitContainers = []corev1.Container{c}
		}, []want{forb("spec.initContainers[0].livenessProbe", "restartPolicy=Always")}},
		{"ephemeral containers on create", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon(validContainer("debug"))}}
		}, []want{forb("spec.ephemeralContainers", "cannot be set on create")}},
		{"activeDeadlineSeconds zero", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(0)) }, []want{inv("spec.activeDeadlineSeconds", "must be between 1 and 2147483647")}},
		{"activeDeadlineSeconds ok", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(60)) }, nil},
		{"hostname and subdomain", func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "Host", "a.b" }, []want{
			inv("spec.hostname", "RFC 1123 label"), inv("spec.subdomain", "must not contain dots")}},
		{"serviceAccountName", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "Bad_SA" }, []want{inv("spec.serviceAccountName", "RFC 1123 subdomain")}},
		{"nodeName", func(p *corev1.Pod) { p.Spec.NodeName = "node_1" }, []want{inv("spec.nodeName", "")}},
		{"nodeName with scheduling gates", func(p *corev1.Pod) {
			p.Spec.NodeName = "node1"
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/gate"}}
		}, []want{forb("spec.nodeName", "schedulingGates")}},
		{"priorityClassName", func(p *corev1.Pod) { p.Spec.PriorityClassName = "High!" }, []want{inv("spec.priorityClassName", "")}},
		{"preemptionPolicy", func(p *corev1.Pod) { p.Spec.PreemptionPolicy = ptr(corev1.PreemptionPolicy("Sometimes")) }, []want{notSup("spec.preemptionPolicy")}},
		{"nodeSelector labels", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"bad key!": "v", "disk": "ssd fast"} }, []want{
			inv("spec.nodeSelector", "name part"), inv("spec.nodeSelector", "valid label")}},
		{"overhead negative", func(p *corev1.Pod) {
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
		}, []want{inv("spec.overhead.limits[cpu]", "greater than or equal to 0")}},
		{"hostNetwork hostPort must equal containerPort", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
		}, []want{inv("spec.containers[0].ports[0].hostPort", "must match `containerPort`")}},
		{"hostNetwork pod needs hostPort set", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
		}, []want{inv("spec.containers[0].ports[0].hostPort", "")}},
		{"mirror pod without nodeName", func(p *corev1.Pod) { p.Annotations = map[string]string{mirrorPodAnnotation: "x"} }, []want{
			inv("metadata.annotations[kubernetes.io/config.mirror]", "spec.nodeName")}},
		{"deletion cost not int32", func(p *corev1.Pod) { p.Annotations = map[string]string{podDeletionCostAnnotation: "1e99"} }, []want{
			inv("metadata.annotations[controller.kubernetes.io/pod-deletion-cost]", "32bit")}},
		{"os unknown", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: "plan9"} }, []want{notSup("spec.os")}},
		{"imagePullSecrets empty name", func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{}} }, []want{req("spec.imagePullSecrets[0].name")}},
	})
}

func TestPodContainerPorts(t *testing.T) {
	port := func(mutate func(*corev1.ContainerPort)) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			cp := corev1.ContainerPort{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}
			mutate(&cp)
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{cp}
		}
	}
	runPodCases(t, []podCase{
		{"valid", port(func(cp *corev1.ContainerPort) {}), nil},
		{"containerPort zero", port(func(cp *corev1.ContainerPort) { cp.ContainerPort = 0 }), []want{req("spec.containers[0].ports[0].containerPort")}},
		{"containerPort too big", port(func(cp *corev1.ContainerPort) { cp.ContainerPort = 70000 }), []want{inv("spec.containers[0].ports[0].containerPort", "between 1 and 65535")}},
		{"hostPort negative", port(func(cp *corev1.ContainerPort) { cp.HostPort = -1 }), []want{inv("spec.containers[0].ports[0].hostPort", "between 1 and 65535")}},
		{"hostPort 0 ok", port(func(cp *corev1.ContainerPort) { cp.HostPort = 0 }), nil},
		{"protocol bad", port(func(cp *corev1.ContainerPort) { cp.Protocol = "ICMP" }), []want{notSup("spec.containers[0].ports[0].protocol")}},
		{"protocol unset", port(func(cp *corev1.ContainerPort) { cp.Protocol = "" }), []want{req("spec.containers[0].ports[0].protocol")}},
		{"SCTP ok", port(func(cp *corev1.ContainerPort) { cp.Protocol = corev1.ProtocolSCTP }), nil},
		{"name not IANA", port(func(cp *corev1.ContainerPort) { cp.Name = "http_web_server_x" }), []want{
			inv("spec.containers[0].ports[0].name", "no more than 15"), inv("spec.containers[0].ports[0].name", "alpha-numeric")}},
		{"duplicate port names", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{
				{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}, {Name: "http", ContainerPort: 81, Protocol: corev1.ProtocolTCP}}
		}, []want{dup("spec.containers[0].ports[1].name")}},
		{"hostPort conflict across containers", func(p *corev1.Pod) {
			c := validContainer("sidecar")
			c.Ports = []corev1.ContainerPort{{ContainerPort: 81, HostPort: 9000, Protocol: corev1.ProtocolTCP}}
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 9000, Protocol: corev1.ProtocolTCP}}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}, []want{dup("spec.containers[1].ports[0].hostPort")}},
	})
}

func TestPodEnv(t *testing.T) {
	env := func(vars ...corev1.EnvVar) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.Containers[0].Env = vars }
	}
	cmRef := &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "k"}
	runPodCases(t, []podCase{
		{"plain", env(corev1.EnvVar{Name: "A", Value: "1"}), nil},
		{"relaxed name with dash and dot", env(corev1.EnvVar{Name: "my-var.x 1", Value: "1"}), nil},
		{"name with equals", env(corev1.EnvVar{Name: "A=B"}), []want{inv("spec.containers[0].env[0].name", "other than '='")}},
		{"name with non-ASCII", env(corev1.EnvVar{Name: "naïve"}), []want{inv("spec.containers[0].env[0].name", "printable ASCII")}},
		{"name empty", env(corev1.EnvVar{Value: "x"}), []want{req("spec.containers[0].env[0].name")}},
		{"valueFrom configMap", env(corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmRef}}), nil},
		{"valueFrom empty", env(corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{}}), []want{inv("spec.containers[0].env[0].valueFrom", "must specify one of")}},
		{"valueFrom two sources", env(corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmRef,
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}),
			[]want{inv("spec.containers[0].env[0].valueFrom", "more than one field")}},
		{"valueFrom with value", env(corev1.EnvVar{Name: "A", Value: "v", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmRef}}),
			[]want{inv("spec.containers[0].env[0].valueFrom", "when `value` is not empty")}},
		{"configMap key invalid", env(corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "a/b"}}}), []want{inv("spec.containers[0].env[0].valueFrom.configMapKeyRef.key", "valid config key")}},
		{"fieldRef ok", env(corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}}), nil},
		{"fieldRef label subscript ok", env(corev1.EnvVar{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['app']"}}}), nil},
		{"fieldRef unsupported", env(corev1.EnvVar{Name: "P", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.phase"}}}),
			[]want{notSup("spec.containers[0].env[0].valueFrom.fieldRef.fieldPath")}},
		{"fieldRef unknown label", env(corev1.EnvVar{Name: "P", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.bogus"}}}),
			[]want{inv("spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", "field label not supported")}},
		{"resourceFieldRef bad divisor", env(corev1.EnvVar{Name: "C", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
			Resource: "limits.cpu", Divisor: resource.MustParse("3")}}}), []want{inv("spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor", "1m and 1")}},
		{"envFrom needs a source", func(p *corev1.Pod) { p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "X_"}} },
			[]want{inv("spec.containers[0].envFrom", "must specify one of")}},
	})
}

func TestPodResources(t *testing.T) {
	res := func(req, lim corev1.ResourceList) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: req, Limits: lim}
		}
	}
	q := resource.MustParse
	runPodCases(t, []podCase{
		{"valid", res(corev1.ResourceList{"cpu": q("250m"), "memory": q("64Mi")}, corev1.ResourceList{"cpu": q("500m"), "memory": q("128Mi")}), nil},
		{"request above limit", res(corev1.ResourceList{"cpu": q("1")}, corev1.ResourceList{"cpu": q("500m")}),
			[]want{inv("spec.containers[0].resources.requests", "must be less than or equal to cpu limit of 500m")}},
		{"negative", res(corev1.ResourceList{"memory": q("-1Mi")}, nil), []want{inv("spec.containers[0].resources.requests[memory]", "greater than or equal to 0")}},
		{"unknown unprefixed resource", res(corev1.ResourceList{"gpu": q("1")}, nil), []want{
			inv("spec.containers[0].resources.requests[gpu]", "standard resource type or fully qualified"),
			inv("spec.containers[0].resources.requests[gpu]", "standard resource for containers")}},
		{"extended resource ok", res(corev1.ResourceList{"example.com/gpu": q("1")}, corev1.ResourceList{"example.com/gpu": q("1")}), nil},
		{"extended resource fractional", res(corev1.ResourceList{"example.com/gpu": q("500m")}, corev1.ResourceList{"example.com/gpu": q("500m")}),
			[]want{inv("spec.containers[0].resources.requests[example.com/gpu]", "integer"), inv("spec.containers[0].resources.limits[example.com/gpu]", "integer")}},
		{"extended resource request without limit", res(corev1.ResourceList{"example.com/gpu": q("1")}, nil),
			[]want{req("spec.containers[0].resources.limits")}},
		{"extended resource request below limit", res(corev1.ResourceList{"example.com/gpu": q("1")}, corev1.ResourceList{"example.com/gpu": q("2")}),
			[]want{inv("spec.containers[0].resources.requests", "must be equal to example.com/gpu limit of 2")}},
		{"hugepages need cpu or memory", res(nil, corev1.ResourceList{"hugepages-2Mi": q("4Mi")}), []want{forb("spec.containers[0].resources", "HugePages require cpu or memory")}},
		{"hugepages not a multiple", res(nil, corev1.ResourceList{"hugepages-2Mi": q("3Mi"), "memory": q("1Gi")}),
			[]want{inv("spec.containers[0].resources.limits[hugepages-2Mi]", "not positive integer multiple")}},
	})
}

func TestPodVolumes(t *testing.T) {
	vol := func(v corev1.Volume, mounts ...corev1.VolumeMount) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{v}
			p.Spec.Containers[0].VolumeMounts = mounts
		}
	}
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	mount := corev1.VolumeMount{Name: "data", MountPath: "/data"}
	neg := resource.MustParse("-1Gi")
	runPodCases(t, []podCase{
		{"emptyDir mounted", vol(corev1.Volume{Name: "data", VolumeSource: emptyDir}, mount), nil},
		{"volume name not a label", vol(corev1.Volume{Name: "Data", VolumeSource: emptyDir}), []want{inv("spec.volumes[0].name", "RFC 1123 label")}},
		{"duplicate volume", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: emptyDir}, {Name: "data", VolumeSource: emptyDir}}
		}, []want{dup("spec.volumes[1].name")}},
		{"no source", vol(corev1.Volume{Name: "data"}), []want{req("spec.volumes[0]")}},
		{"two sources", vol(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{},
			HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}}), []want{forb("spec.volumes[0].emptyDir", "more than 1 volume type")}},
		{"emptyDir negative size", vol(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &neg}}}),
			[]want{forb("spec.volumes[0].emptyDir.sizeLimit", "")}},
		{"hostPath requires path", vol(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{}}}),
			[]want{req("spec.volumes[0].hostPath.path")}},
		{"hostPath backsteps", vol(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/../etc"}}}),
			[]want{inv("spec.volumes[0].hostPath.path", "'..'")}},
		{"configMap items", vol(corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
			Items:                []corev1.KeyToPath{{Key: "a", Path: "/abs"}, {Key: "b", Path: "../up"}, {Key: "c", Path: "..dots"}, {Key: "d", Path: "ok/x", Mode: ptr(int32(0o1000))}}}}}),
			[]want{inv("spec.volumes[0].configMap.items[0].path", "relative path"), inv("spec.volumes[0].configMap.items[1].path", "'..'"),
				inv("spec.volumes[0].configMap.items[2].path", "must not start with '..'"), inv("spec.volumes[0].configMap.items[3].mode", "0777")}},
		{"configMap name required", vol(corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}),
			[]want{req("spec.volumes[0].configMap.name")}},
		{"secret name required", vol(corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}}),
			[]want{req("spec.volumes[0].secret.secretName")}},
		{"mount of unknown volume", vol(corev1.Volume{Name: "data", VolumeSource: emptyDir}, corev1.VolumeMount{Name: "other", MountPath: "/x"}),
			[]want{notFound("spec.containers[0].volumeMounts[0].name")}},
		{"mount path relative", vol(corev1.Volume{Name: "data", VolumeSource: emptyDir}, corev1.VolumeMount{Name: "data", MountPath: "data"}),
			[]want{inv("spec.containers[0].volumeMounts[0].mountPath", "absolute")}},
		{"mount path duplicate", vol(corev1.Volume{Name: "data", VolumeSource: emptyDir}, mount, mount),
			[]want{inv("spec.containers[0].volumeMounts[1].mountPath", "must be unique")}},
		{"subPath absolute", vol(corev1.Volume{Name: "data", VolumeSource: emptyDir}, corev1.VolumeMount{Name: "data", MountPath: "/d", SubPath: "/x"}),
			[]want{inv("spec.containers[0].volumeMounts[0].subPath", "relative")}},
		{"subPath backstep", vol(corev1.Volume{Name: "data", VolumeSource: emptyDir}, corev1.VolumeMount{Name: "data", MountPath: "/d", SubPath: "a/../../x"}),
			[]want{inv("spec.containers[0].volumeMounts[0].subPath", "'..'")}},
		{"bidirectional needs privileged", vol(corev1.Volume{Name: "data", VolumeSource: emptyDir},
			corev1.VolumeMount{Name: "data", MountPath: "/d", MountPropagation: ptr(corev1.MountPropagationBidirectional)}),
			[]want{forb("spec.containers[0].volumeMounts[0].mountPropagation", "privileged")}},
		{"projected token needs service account", vol(corev1.Volume{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3600))}}}}}}),
			[]want{forb("spec.volumes[0].projected.sources[0].serviceAccountToken", "serviceAccountName")}},
	})
}

func TestPodProbesAndLifecycle(t *testing.T) {
	probe := func() *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
			TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	}
	with := func(f func(*corev1.Container)) func(*corev1.Pod) {
		return func(p *corev1.Pod) { f(&p.Spec.Containers[0]) }
	}
	runPodCases(t, []podCase{
		{"valid probes", with(func(c *corev1.Container) {
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = probe(), probe(), probe()
		}), nil},
		{"no handler", with(func(c *corev1.Container) { pr := probe(); pr.HTTPGet = nil; c.LivenessProbe = pr }),
			[]want{req("spec.containers[0].livenessProbe")}},
		{"two handlers", with(func(c *corev1.Container) {
			pr := probe()
			pr.Exec = &corev1.ExecAction{Command: []string{"true"}}
			c.ReadinessProbe = pr
		}), []want{forb("spec.containers[0].readinessProbe.httpGet", "more than 1 handler type")}},
		{"liveness success threshold", with(func(c *corev1.Container) { pr := probe(); pr.SuccessThreshold = 2; c.LivenessProbe = pr }),
			[]want{inv("spec.containers[0].livenessProbe.successThreshold", "must be 1")}},
		{"startup success threshold", with(func(c *corev1.Container) { pr := probe(); pr.SuccessThreshold = 3; c.StartupProbe = pr }),
			[]want{inv("spec.containers[0].startupProbe.successThreshold", "must be 1")}},
		{"readiness success threshold may exceed 1", with(func(c *corev1.Container) { pr := probe(); pr.SuccessThreshold = 3; c.ReadinessProbe = pr }), nil},
		{"negative period", with(func(c *corev1.Container) { pr := probe(); pr.PeriodSeconds = -1; c.ReadinessProbe = pr }),
			[]want{inv("spec.containers[0].readinessProbe.periodSeconds", "greater than or equal to 0")}},
		{"zero failure threshold", with(func(c *corev1.Container) { pr := probe(); pr.FailureThreshold = 0; c.ReadinessProbe = pr }),
			[]want{inv("spec.containers[0].readinessProbe.failureThreshold", "greater than or equal to 1")}},
		{"exec without command", with(func(c *corev1.Container) {
			c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{}}, TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
		}), []want{req("spec.containers[0].livenessProbe.exec.command")}},
		{"http port out of range", with(func(c *corev1.Container) { pr := probe(); pr.HTTPGet.Port = intstr.FromInt32(0); c.ReadinessProbe = pr }),
			[]want{inv("spec.containers[0].readinessProbe.httpGet.port", "between 1 and 65535")}},
		{"http scheme", with(func(c *corev1.Container) { pr := probe(); pr.HTTPGet.Scheme = "FTP"; c.ReadinessProbe = pr }),
			[]want{notSup("spec.containers[0].readinessProbe.httpGet.scheme")}},
		{"readiness grace period", with(func(c *corev1.Container) {
			pr := probe()
			pr.TerminationGracePeriodSeconds = ptr(int64(5))
			c.ReadinessProbe = pr
		}),
			[]want{inv("spec.containers[0].readinessProbe.terminationGracePeriodSeconds", "must not be set for readinessProbes")}},
		{"preStop sleep beyond grace", with(func(c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 60}}}
		}), []want{inv("spec.containers[0].lifecycle.preStop.sleep", "terminationGracePeriodSeconds (30)")}},
		{"postStart without handler", with(func(c *corev1.Container) { c.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{}} }),
			[]want{req("spec.containers[0].lifecycle.postStart")}},
		{"preStop exec ok", with(func(c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 1"}}}}
		}), nil},
	})
}

func TestPodSecurityContext(t *testing.T) {
	sc := func(s corev1.SecurityContext) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = &s }
	}
	runPodCases(t, []podCase{
		{"valid", sc(corev1.SecurityContext{RunAsUser: ptr(int64(1000)), Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}}}), nil},
		{"negative runAsUser", sc(corev1.SecurityContext{RunAsUser: ptr(int64(-1))}), []want{inv("spec.containers[0].securityContext.runAsUser", "between 0 and 2147483647")}},
		{"negative runAsGroup", sc(corev1.SecurityContext{RunAsGroup: ptr(int64(-5))}), []want{inv("spec.containers[0].securityContext.runAsGroup", "")}},
		{"privileged without escalation", sc(corev1.SecurityContext{Privileged: ptr(true), AllowPrivilegeEscalation: ptr(false)}),
			[]want{inv("spec.containers[0].securityContext", "cannot set `allowPrivilegeEscalation` to false and `privileged` to true")}},
		{"bad capability", sc(corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET ADMIN", ""}}}),
			[]want{inv("spec.containers[0].securityContext.capabilities.add[0]", "capability"), req("spec.containers[0].securityContext.capabilities.add[1]")}},
		{"seccomp type", sc(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: "Strict"}}), []want{notSup("spec.containers[0].securityContext.seccompProfile.type")}},
		{"seccomp localhost needs profile", sc(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}),
			[]want{req("spec.containers[0].securityContext.seccompProfile.localhostProfile")}},
		{"seccomp profile only for localhost", sc(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault, LocalhostProfile: ptr("x.json")}}),
			[]want{inv("spec.containers[0].securityContext.seccompProfile.localhostProfile", "only be set when seccomp type is Localhost")}},
		{"unmasked procMount needs user namespace", sc(corev1.SecurityContext{ProcMount: ptr(corev1.UnmaskedProcMount)}),
			[]want{inv("spec.containers[0].securityContext.procMount", "`hostUsers` must be false")}},
		{"pod runAsUser", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(-1)), FSGroup: ptr(int64(-2))}
		},
			[]want{inv("spec.securityContext.runAsUser", ""), inv("spec.securityContext.fsGroup", "")}},
		{"sysctl with hostNetwork", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}, {Name: "Bad Name"}}}
		}, []want{inv("spec.securityContext.sysctls[0].name", "hostNetwork"), inv("spec.securityContext.sysctls[1].name", "match regex")}},
		{"shareProcessNamespace with hostPID", func(p *corev1.Pod) { p.Spec.HostPID, p.Spec.ShareProcessNamespace = true, ptr(true) },
			[]want{inv("spec.shareProcessNamespace", "cannot both be enabled")}},
	})
}

func TestPrivilegedDisallowedByPolicy(t *testing.T) {
	v, err := New(WithAllowPrivileged(false))
	if err != nil {
		t.Fatal(err)
	}
	p := validPod()
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
	expectErrors(t, v.ValidateCreate(p), forb("spec.containers[0].securityContext.privileged", "disallowed by cluster policy"))
	expectErrors(t, Default().ValidateCreate(p))
}

func TestPodEphemeralAllowList(t *testing.T) {
	v := Default()
	old := validPod()
	old.ObjectMeta = storedMeta(old.ObjectMeta)
	pod := old.DeepCopy()
	ec := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon(validContainer("debug")), TargetContainerName: "app"}
	ec.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{ec}
	expectErrors(t, v.ValidateEphemeralContainersUpdate(pod, old), forb("spec.ephemeralContainers[0].ports", "Ephemeral Container"))

	pod.Spec.EphemeralContainers[0].Ports = nil
	pod.Spec.EphemeralContainers[0].TargetContainerName = "nope"
	expectErrors(t, v.ValidateEphemeralContainersUpdate(pod, old), notFound("spec.ephemeralContainers[0].targetContainerName"))

	pod.Spec.EphemeralContainers[0].TargetContainerName = "app"
	expectErrors(t, v.ValidateEphemeralContainersUpdate(pod, old))

	// Existing ephemeral containers may not change or disappear.
	next := pod.DeepCopy()
	next.Spec.EphemeralContainers[0].Image = "busybox"
	errs := v.ValidateEphemeralContainersUpdate(next, pod)
	expectErrors(t, errs, forb("spec.ephemeralContainers", `existing ephemeral containers "debug" may not be changed`))
	if !strings.Contains(errs[0].Detail, "busybox") {
		t.Fatalf("diff missing from %q", errs[0].Detail)
	}
	next.Spec.EphemeralContainers = nil
	expectErrors(t, v.ValidateEphemeralContainersUpdate(next, pod), forb("spec.ephemeralContainers", "may not be removed"))
}
