package defaults

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPodMinimal(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
	Pod(p)

	s := p.Spec
	assert.Equal(t, corev1.RestartPolicyAlways, s.RestartPolicy)
	assert.Equal(t, corev1.DNSClusterFirst, s.DNSPolicy)
	require.NotNil(t, s.TerminationGracePeriodSeconds)
	assert.Equal(t, int64(30), *s.TerminationGracePeriodSeconds)
	assert.Equal(t, "default-scheduler", s.SchedulerName)
	assert.Equal(t, &corev1.PodSecurityContext{}, s.SecurityContext)
	require.NotNil(t, s.EnableServiceLinks)
	assert.True(t, *s.EnableServiceLinks)

	c := s.Containers[0]
	assert.Equal(t, corev1.PullAlways, c.ImagePullPolicy)
	assert.Equal(t, "/dev/termination-log", c.TerminationMessagePath)
	assert.Equal(t, corev1.TerminationMessageReadFile, c.TerminationMessagePolicy)

	// Left to admission plugins and the REST strategy.
	assert.Nil(t, s.Priority)
	assert.Nil(t, s.PreemptionPolicy)
	assert.Empty(t, s.Tolerations)
	assert.Empty(t, s.ServiceAccountName)
	assert.Empty(t, p.Status.Phase)
	assert.Empty(t, p.Status.QOSClass)
}

func TestPodKeepsExplicitValues(t *testing.T) {
	grace := int64(5)
	links := false
	p := &corev1.Pod{Spec: corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		DNSPolicy:                     corev1.DNSDefault,
		TerminationGracePeriodSeconds: &grace,
		SchedulerName:                 "mine",
		EnableServiceLinks:            &links,
		Containers: []corev1.Container{{
			Name: "app", Image: "nginx", ImagePullPolicy: corev1.PullNever,
			TerminationMessagePath: "/x", TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}},
	}}
	Pod(p)
	assert.Equal(t, corev1.RestartPolicyNever, p.Spec.RestartPolicy)
	assert.Equal(t, corev1.DNSDefault, p.Spec.DNSPolicy)
	assert.Equal(t, int64(5), *p.Spec.TerminationGracePeriodSeconds)
	assert.Equal(t, "mine", p.Spec.SchedulerName)
	assert.False(t, *p.Spec.EnableServiceLinks)
	c := p.Spec.Containers[0]
	assert.Equal(t, corev1.PullNever, c.ImagePullPolicy)
	assert.Equal(t, "/x", c.TerminationMessagePath)
	assert.Equal(t, corev1.TerminationMessageFallbackToLogsOnError, c.TerminationMessagePolicy)
}

func TestPodContainerDefaults(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36", Ports: []corev1.ContainerPort{{ContainerPort: 1}}}},
		Containers: []corev1.Container{{
			Name:  "app",
			Image: "nginx:1.27",
			Ports: []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}},
			Env: []corev1.EnvVar{
				{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				{Name: "F", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k"}}},
				{Name: "PLAIN", Value: "x"},
			},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000}},
				PeriodSeconds: 3, TimeoutSeconds: 2, SuccessThreshold: 1, FailureThreshold: 7,
			},
			StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}},
			Lifecycle: &corev1.Lifecycle{
				PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/quit", Port: intstr.FromInt32(80)}},
			},
		}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "busybox"}}},
	}}
	Pod(p)

	assert.Equal(t, corev1.PullIfNotPresent, p.Spec.InitContainers[0].ImagePullPolicy)
	assert.Equal(t, corev1.ProtocolTCP, p.Spec.InitContainers[0].Ports[0].Protocol)
	c := p.Spec.Containers[0]
	assert.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy)
	assert.Equal(t, corev1.ProtocolTCP, c.Ports[0].Protocol)
	assert.Equal(t, corev1.ProtocolUDP, c.Ports[1].Protocol)
	assert.Equal(t, "v1", c.Env[0].ValueFrom.FieldRef.APIVersion)
	require.NotNil(t, c.Env[1].ValueFrom.FileKeyRef.Optional)
	assert.False(t, *c.Env[1].ValueFrom.FileKeyRef.Optional)
	assert.Nil(t, c.Env[2].ValueFrom)

	assert.Equal(t, corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
	}, *c.LivenessProbe)
	assert.Equal(t, int32(3), c.ReadinessProbe.PeriodSeconds)
	assert.Equal(t, int32(2), c.ReadinessProbe.TimeoutSeconds)
	assert.Equal(t, int32(7), c.ReadinessProbe.FailureThreshold)
	require.NotNil(t, c.ReadinessProbe.GRPC.Service)
	assert.Equal(t, "", *c.ReadinessProbe.GRPC.Service)
	assert.Equal(t, int32(1), c.StartupProbe.TimeoutSeconds)
	assert.Equal(t, "/quit", c.Lifecycle.PreStop.HTTPGet.Path)
	assert.Equal(t, corev1.URISchemeHTTP, c.Lifecycle.PreStop.HTTPGet.Scheme)

	e := p.Spec.EphemeralContainers[0]
	assert.Equal(t, corev1.PullAlways, e.ImagePullPolicy)
	assert.Equal(t, "/dev/termination-log", e.TerminationMessagePath)
}

func TestPodResources(t *testing.T) {
	tests := []struct {
		name         string
		resources    corev1.ResourceRequirements
		wantRequests corev1.ResourceList
		wantLimits   corev1.ResourceList
	}{
		{
			name:         "no resources stay nil",
			resources:    corev1.ResourceRequirements{},
			wantRequests: nil,
			wantLimits:   nil,
		},
		{
			name:         "limits become requests",
			resources:    corev1.ResourceRequirements{Limits: rl("cpu", "500m", "memory", "128Mi")},
			wantRequests: rl("cpu", "500m", "memory", "128Mi"),
			wantLimits:   rl("cpu", "500m", "memory", "128Mi"),
		},
		{
			name:         "explicit request is kept, missing one copied",
			resources:    corev1.ResourceRequirements{Limits: rl("cpu", "1", "memory", "1Gi"), Requests: rl("cpu", "100m")},
			wantRequests: rl("cpu", "100m", "memory", "1Gi"),
			wantLimits:   rl("cpu", "1", "memory", "1Gi"),
		},
		{
			name:         "sub-milli values round up",
			resources:    corev1.ResourceRequirements{Requests: rl("cpu", "0.0001")},
			wantRequests: rl("cpu", "1m"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: corev1.PodSpec{
				Containers:     []corev1.Container{{Name: "a", Image: "x:1", Resources: *tt.resources.DeepCopy()}},
				InitContainers: []corev1.Container{{Name: "i", Image: "x:1", Resources: *tt.resources.DeepCopy()}},
			}}
			Pod(p)
			for _, c := range []corev1.Container{p.Spec.Containers[0], p.Spec.InitContainers[0]} {
				assertResources(t, tt.wantRequests, c.Resources.Requests)
				assertResources(t, tt.wantLimits, c.Resources.Limits)
			}
		})
	}
}

func TestPodTemplateDoesNotCopyLimitsOrLinks(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		HostNetwork: true,
		Containers: []corev1.Container{{
			Name: "a", Image: "x", Resources: corev1.ResourceRequirements{Limits: rl("cpu", "1")},
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
		}},
	}}
	PodTemplateSpec(tmpl)
	assert.Nil(t, tmpl.Spec.Containers[0].Resources.Requests)
	assert.Nil(t, tmpl.Spec.EnableServiceLinks)
	assert.Zero(t, tmpl.Spec.Containers[0].Ports[0].HostPort)
	assert.Equal(t, corev1.RestartPolicyAlways, tmpl.Spec.RestartPolicy)
	assert.Equal(t, corev1.ProtocolTCP, tmpl.Spec.Containers[0].Ports[0].Protocol)
}

func TestPodHostNetworkPorts(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{
		Name: "a", Image: "x", Ports: []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 9090, HostPort: 9091}},
	}}}}
	Pod(p)
	assert.Equal(t, int32(8080), p.Spec.Containers[0].Ports[0].HostPort)
	assert.Equal(t, int32(9091), p.Spec.Containers[0].Ports[1].HostPort)
}

func TestPodServiceAccountConversion(t *testing.T) {
	tests := []struct {
		name, account, deprecated string
		want                      string
	}{
		{name: "neither", want: ""},
		{name: "name only", account: "builder", want: "builder"},
		{name: "deprecated only", deprecated: "legacy", want: "legacy"},
		{name: "name wins", account: "builder", deprecated: "legacy", want: "builder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: tt.account, DeprecatedServiceAccount: tt.deprecated}}
			Pod(p)
			assert.Equal(t, tt.want, p.Spec.ServiceAccountName)
			assert.Equal(t, tt.want, p.Spec.DeprecatedServiceAccount)
		})
	}
}

func TestPodVolumes(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "empty"},
		{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
		{Name: "mode", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{DefaultMode: ptrTo(int32(0400))}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}},
		{Name: "down", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		}}}},
		{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
			}}},
		}}}},
		{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry.local/data:v1"}}},
		{Name: "eph", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{},
		}}},
	}}}
	Pod(p)
	v := p.Spec.Volumes
	assert.Equal(t, &corev1.EmptyDirVolumeSource{}, v[0].EmptyDir)
	assert.Equal(t, int32(0644), *v[1].ConfigMap.DefaultMode)
	assert.Equal(t, int32(0644), *v[2].Secret.DefaultMode)
	assert.Equal(t, int32(0400), *v[3].Secret.DefaultMode)
	require.NotNil(t, v[4].HostPath.Type)
	assert.Equal(t, corev1.HostPathUnset, *v[4].HostPath.Type)
	assert.Equal(t, int32(0644), *v[5].DownwardAPI.DefaultMode)
	assert.Equal(t, "v1", v[5].DownwardAPI.Items[0].FieldRef.APIVersion)
	assert.Equal(t, int32(0644), *v[6].Projected.DefaultMode)
	assert.Equal(t, int64(3600), *v[6].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds)
	assert.Equal(t, "v1", v[6].Projected.Sources[1].DownwardAPI.Items[0].FieldRef.APIVersion)
	assert.Equal(t, corev1.PullIfNotPresent, v[7].Image.PullPolicy)
	assert.Equal(t, corev1.PersistentVolumeFilesystem, *v[8].Ephemeral.VolumeClaimTemplate.Spec.VolumeMode)
}

func TestPodLevelResources(t *testing.T) {
	tests := []struct {
		name         string
		pod          *corev1.ResourceRequirements
		containers   []corev1.ResourceRequirements
		wantRequests corev1.ResourceList
		wantLimits   corev1.ResourceList
	}{
		{
			name:       "untouched without pod-level resources",
			containers: []corev1.ResourceRequirements{{Requests: rl("cpu", "1")}},
		},
		{
			name:         "requests from containers, else from the pod limit",
			pod:          &corev1.ResourceRequirements{Limits: rl("cpu", "2", "memory", "1Gi")},
			containers:   []corev1.ResourceRequirements{{Requests: rl("cpu", "300m")}, {Requests: rl("cpu", "200m")}},
			wantRequests: rl("cpu", "500m", "memory", "1Gi"),
			wantLimits:   rl("cpu", "2", "memory", "1Gi"),
		},
		{
			name:         "limits summed when every container has one",
			pod:          &corev1.ResourceRequirements{Requests: rl("cpu", "1")},
			containers:   []corev1.ResourceRequirements{{Limits: rl("cpu", "1", "memory", "64Mi")}, {Limits: rl("cpu", "2")}},
			wantRequests: rl("cpu", "1"),
			wantLimits:   rl("cpu", "3"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: corev1.PodSpec{Resources: tt.pod}}
			for i, r := range tt.containers {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Image: "x", Resources: r})
			}
			Pod(p)
			if tt.pod == nil {
				assert.Nil(t, p.Spec.Resources)
				return
			}
			assertResources(t, tt.wantRequests, p.Spec.Resources.Requests)
			assertResources(t, tt.wantLimits, p.Spec.Resources.Limits)
		})
	}
}

func TestContainerResourcesSidecarFormula(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "sidecar", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl("cpu", "100m")}},
			{Name: "migrate", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "1Gi")}},
		},
		Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "500m", "memory", "2Gi")}},
			{Name: "b", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "500m")}},
		},
	}
	req, lim := ContainerResources(spec)
	// cpu: max(0.5+0.5+0.1, 2+0.1); memory: max(2Gi, 1Gi).
	assertResources(t, rl("cpu", "2100m", "memory", "2Gi"), req)
	assert.Empty(t, lim)
}

// rl builds a ResourceList from name, quantity pairs.
func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// assertResources compares quantities by value, not by representation.
func assertResources(t *testing.T, want, got corev1.ResourceList) {
	t.Helper()
	if want == nil {
		assert.Nil(t, got)
		return
	}
	require.Len(t, got, len(want), "got %v", got)
	for name, q := range want {
		g, ok := got[name]
		if assert.True(t, ok, "missing %s in %v", name, got) {
			assert.Zero(t, q.Cmp(g), "%s: want %s, got %s", name, q.String(), g.String())
		}
	}
}
