package volume

import (
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// setupDownwardAPI projects pod fields and container resources into an
// on-disk directory.
func (m *Manager) setupDownwardAPI(pod *corev1.Pod, name string, src *corev1.DownwardAPIVolumeSource) (string, error) {
	payload, err := m.downwardPayload(pod, src.Items, src.DefaultMode)
	if err != nil {
		return "", err
	}
	dir := m.volumeDir(pod.UID, PluginDownwardAPI, name)
	return dir, m.writeVolume(pod, dir, false, payload)
}

func (m *Manager) downwardPayload(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defaultMode *int32) (map[string]file, error) {
	dm, err := fileMode(defaultMode, defaultFileMode)
	if err != nil {
		return nil, err
	}
	payload := make(map[string]file, len(items))
	for _, it := range items {
		mode, err := fileMode(it.Mode, int32(dm))
		if err != nil {
			return nil, err
		}
		var v string
		switch {
		case it.FieldRef != nil:
			v, err = m.fieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			v, err = m.resourceValue(pod, it.ResourceFieldRef)
		default:
			err = fmt.Errorf("downwardAPI item %q has neither fieldRef nor resourceFieldRef", it.Path)
		}
		if err != nil {
			return nil, err
		}
		payload[path.Clean(it.Path)] = file{data: []byte(v), mode: mode}
	}
	return payload, nil
}

// fieldValue is FieldValue with spec.nodeName defaulting to the node's name.
func (m *Manager) fieldValue(pod *corev1.Pod, fieldPath string) (string, error) {
	if fieldPath == "spec.nodeName" && pod.Spec.NodeName == "" {
		return m.nodeName, nil
	}
	return FieldValue(pod, fieldPath)
}

func (m *Manager) resourceValue(pod *corev1.Pod, fs *corev1.ResourceFieldSelector) (string, error) {
	if fs.ContainerName == "" {
		return "", fmt.Errorf("resourceFieldRef %s: containerName is required in volumes", fs.Resource)
	}
	c := findContainer(pod, fs.ContainerName)
	if c == nil {
		return "", fmt.Errorf("container %s not found", fs.ContainerName)
	}
	var alloc corev1.ResourceList
	if m.allocatable != nil {
		alloc = m.allocatable()
	}
	return ContainerResourceValue(fs, c, alloc)
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}

// FieldValue returns a pod field as the downward API presents it, in
// volumes and env alike: metadata.name, metadata.namespace, metadata.uid,
// metadata.labels and metadata.annotations (sorted `key="value"` lines),
// metadata.labels['k'] and metadata.annotations['k'], spec.nodeName,
// spec.serviceAccountName, status.podIP, status.podIPs, status.hostIP and
// status.hostIPs (comma-separated).
func FieldValue(pod *corev1.Pod, fieldPath string) (string, error) {
	if p, key, ok := splitSubscript(fieldPath); ok {
		switch p {
		case "metadata.labels":
			return pod.Labels[key], nil
		case "metadata.annotations":
			return pod.Annotations[key], nil
		}
		return "", fmt.Errorf("fieldPath %q does not support subscript", fieldPath)
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.podIPs":
		ips := make([]string, 0, len(pod.Status.PodIPs))
		for _, ip := range pod.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	case "status.hostIPs":
		ips := make([]string, 0, len(pod.Status.HostIPs))
		for _, ip := range pod.Status.HostIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", fieldPath)
}

// splitSubscript splits "metadata.labels['k']" into "metadata.labels", "k".
func splitSubscript(fieldPath string) (p, key string, ok bool) {
	s, ok := strings.CutSuffix(fieldPath, "']")
	if !ok {
		return "", "", false
	}
	p, key, ok = strings.Cut(s, "['")
	if !ok || p == "" || key == "" {
		return "", "", false
	}
	return p, key, true
}

// formatMap renders labels or annotations as the kubelet does: one
// key="value" line per key (value quoted like Go's %q), sorted by key, no
// trailing newline.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k + "=" + strconv.Quote(m[k]))
	}
	return b.String()
}

// ContainerResourceValue returns a container's request or limit in units of
// the selector's divisor (default 1), rounded up, as Kubernetes does:
// limits.cpu, limits.memory, limits.ephemeral-storage, limits.hugepages-<size>
// and the same for requests. CPU is divided in millicores. Unset limits of
// cpu, memory and ephemeral-storage default to allocatable (may be nil); an
// unset request defaults to the container's limit, as API defaulting does.
func ContainerResourceValue(fs *corev1.ResourceFieldSelector, c *corev1.Container, allocatable corev1.ResourceList) (string, error) {
	divisor := fs.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(fs.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource : %v", fs.Resource)
	}
	rn := corev1.ResourceName(name)
	q := c.Resources.Limits[rn]
	if kind == "requests" {
		if r, ok := c.Resources.Requests[rn]; ok {
			q = r
		}
	} else if q.IsZero() && defaultsToAllocatable(rn) {
		q = allocatable[rn]
	}
	switch {
	case rn == corev1.ResourceCPU:
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case rn == corev1.ResourceMemory, rn == corev1.ResourceEphemeralStorage,
		strings.HasPrefix(name, corev1.ResourceHugePagesPrefix):
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource : %v", fs.Resource)
}

func defaultsToAllocatable(rn corev1.ResourceName) bool {
	return rn == corev1.ResourceCPU || rn == corev1.ResourceMemory || rn == corev1.ResourceEphemeralStorage
}
