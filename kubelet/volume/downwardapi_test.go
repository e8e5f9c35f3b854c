package volume

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func fieldItem(p, field string) corev1.DownwardAPIVolumeFile {
	return corev1.DownwardAPIVolumeFile{Path: p, FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: field}}
}

func richPod() *corev1.Pod {
	pod := testPod()
	pod.Labels = map[string]string{"tier": "web", "app": "shop", "quote": `a"b`}
	pod.Annotations = map[string]string{"owner": "team-a"}
	pod.Spec.ServiceAccountName = "builder"
	pod.Status.PodIP = "10.0.0.7"
	pod.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.7"}, {IP: "fd00::7"}}
	pod.Status.HostIP = "192.168.1.2"
	pod.Status.HostIPs = []corev1.HostIP{{IP: "192.168.1.2"}}
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("1500m"),
			corev1.ResourceMemory: resource.MustParse("256Mi"),
			"hugepages-2Mi":       resource.MustParse("4Mi"),
		},
		Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("250m"),
		},
	}
	return pod
}

func TestFieldValue(t *testing.T) {
	pod := richPod()
	for _, tc := range []struct{ path, want, err string }{
		{path: "metadata.name", want: "web"},
		{path: "metadata.namespace", want: "default"},
		{path: "metadata.uid", want: "uid-1234"},
		{path: "metadata.labels", want: "app=\"shop\"\nquote=\"a\\\"b\"\ntier=\"web\""},
		{path: "metadata.annotations", want: `owner="team-a"`},
		{path: "metadata.labels['tier']", want: "web"},
		{path: "metadata.annotations['owner']", want: "team-a"},
		{path: "metadata.labels['absent']", want: ""},
		{path: "spec.nodeName", want: "node-a"},
		{path: "spec.serviceAccountName", want: "builder"},
		{path: "status.podIP", want: "10.0.0.7"},
		{path: "status.podIPs", want: "10.0.0.7,fd00::7"},
		{path: "status.hostIP", want: "192.168.1.2"},
		{path: "status.hostIPs", want: "192.168.1.2"},
		{path: "metadata.name['x']", err: `fieldPath "metadata.name['x']" does not support subscript`},
		{path: "spec.restartPolicy", err: "unsupported fieldPath: spec.restartPolicy"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, err := FieldValue(pod, tc.path)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	empty, err := FieldValue(testPod(), "metadata.labels")
	require.NoError(t, err)
	assert.Empty(t, empty)
}

func TestContainerResourceValue(t *testing.T) {
	c := &richPod().Spec.Containers[0]
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("8Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	for _, tc := range []struct {
		res, divisor string
		alloc        corev1.ResourceList
		want, err    string
	}{
		{res: "limits.cpu", want: "2"}, // 1.5 cores rounded up
		{res: "limits.cpu", divisor: "1m", want: "1500"},
		{res: "limits.cpu", divisor: "100m", want: "15"},
		{res: "requests.cpu", divisor: "1m", want: "250"},
		{res: "requests.cpu", want: "1"},
		{res: "limits.memory", want: "268435456"},
		{res: "limits.memory", divisor: "1Mi", want: "256"},
		{res: "limits.memory", divisor: "1G", want: "1"},
		{res: "requests.memory", divisor: "1Mi", want: "256"}, // request defaults to the limit
		{res: "limits.ephemeral-storage", want: "0"},
		{res: "limits.ephemeral-storage", divisor: "1Gi", alloc: alloc, want: "100"},
		{res: "limits.cpu", alloc: alloc, want: "2"}, // set limits win over allocatable
		{res: "requests.ephemeral-storage", alloc: alloc, want: "0"},
		{res: "limits.hugepages-2Mi", divisor: "1Mi", want: "4"},
		{res: "requests.hugepages-2Mi", divisor: "1Mi", want: "4"},
		{res: "limits.gpu", err: "unsupported container resource : limits.gpu"},
		{res: "cpu", err: "unsupported container resource : cpu"},
	} {
		t.Run(tc.res+"/"+tc.divisor, func(t *testing.T) {
			fs := &corev1.ResourceFieldSelector{Resource: tc.res}
			if tc.divisor != "" {
				fs.Divisor = resource.MustParse(tc.divisor)
			}
			got, err := ContainerResourceValue(fs, c, tc.alloc)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	unlimited := &corev1.Container{}
	got, err := ContainerResourceValue(&corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Gi")}, unlimited, alloc)
	require.NoError(t, err)
	assert.Equal(t, "8", got, "unset limits default to allocatable")
}

func TestDownwardAPIVolume(t *testing.T) {
	env := newTestManager(t)
	pod := richPod()
	pod.Spec.NodeName = "" // the Manager's NodeName fills in
	pod.Spec.Volumes = []corev1.Volume{{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		DefaultMode: ptr.To[int32](0o600),
		Items: []corev1.DownwardAPIVolumeFile{
			fieldItem("name", "metadata.name"),
			fieldItem("meta/labels", "metadata.labels"),
			fieldItem("node", "spec.nodeName"),
			{Path: "cpu_limit", Mode: ptr.To[int32](0o444), ResourceFieldRef: &corev1.ResourceFieldSelector{
				ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1m"),
			}},
		},
	}}}}
	paths, err := env.m.Setup(context.Background(), pod)
	require.NoError(t, err)
	dir := paths["info"]
	assert.Equal(t, filepath.Join(env.m.podsDir, "uid-1234/volumes/kubernetes.io~downward-api/info"), dir)
	assert.Equal(t, "web", readFile(t, filepath.Join(dir, "name")))
	assert.Equal(t, "app=\"shop\"\nquote=\"a\\\"b\"\ntier=\"web\"", readFile(t, filepath.Join(dir, "meta/labels")))
	assert.Equal(t, "node-a", readFile(t, filepath.Join(dir, "node")))
	assert.Equal(t, "1500", readFile(t, filepath.Join(dir, "cpu_limit")))
	assert.Equal(t, os.FileMode(0o600), modeOf(t, filepath.Join(dir, "name")))
	assert.Equal(t, os.FileMode(0o444), modeOf(t, filepath.Join(dir, "cpu_limit")))

	// Label changes propagate on the next sync, through the same path.
	labels := filepath.Join(dir, "meta/labels")
	pod.Labels["tier"] = "api"
	_, err = env.m.Setup(context.Background(), pod)
	require.NoError(t, err)
	assert.Equal(t, "app=\"shop\"\nquote=\"a\\\"b\"\ntier=\"api\"", readFile(t, labels))
	assert.Len(t, dataDirs(t, dir), 1)
}

func TestDownwardAPIErrors(t *testing.T) {
	for _, tc := range []struct {
		item corev1.DownwardAPIVolumeFile
		err  string
	}{
		{fieldItem("x", "spec.containers"), "unsupported fieldPath: spec.containers"},
		{corev1.DownwardAPIVolumeFile{Path: "x", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "ghost", Resource: "limits.cpu"}}, "container ghost not found"},
		{corev1.DownwardAPIVolumeFile{Path: "x", ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}, "containerName is required"},
		{corev1.DownwardAPIVolumeFile{Path: "x"}, "neither fieldRef nor resourceFieldRef"},
		{fieldItem("/abs", "metadata.name"), "must be relative path"},
	} {
		t.Run(tc.err, func(t *testing.T) {
			env := newTestManager(t)
			_, err := env.m.Setup(context.Background(), testPod(corev1.Volume{Name: "d", VolumeSource: corev1.VolumeSource{
				DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{tc.item}},
			}}))
			require.ErrorContains(t, err, tc.err)
		})
	}
}
