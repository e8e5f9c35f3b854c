package admission

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// Where and how the ServiceAccount plugin mounts a pod's API credentials,
// as Kubernetes does.
const (
	// ServiceAccountTokenMountPath is where every container finds token,
	// ca.crt and namespace.
	ServiceAccountTokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// ServiceAccountVolumePrefix starts the projected volume's name
	// (kube-api-access-<5 random characters>).
	ServiceAccountVolumePrefix = "kube-api-access-"
	// RootCAConfigMap holds the cluster CA (key ca.crt) in every
	// namespace.
	RootCAConfigMap = "kube-root-ca.crt"
	// ServiceAccountTokenExpirationSeconds is the projected token's
	// lifetime (Kubernetes' 3607: an hour and a tell-tale 7 seconds).
	ServiceAccountTokenExpirationSeconds = int64(3607)
)

// automounts: the pod's automountServiceAccountToken wins, then the
// account's; the default is true.
func automounts(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// TokenVolumeSource is the projected volume the plugin adds: a bound
// service-account token (path token, for the API's audiences), the
// cluster CA from the kube-root-ca.crt ConfigMap and the pod's namespace.
func TokenVolumeSource() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](corev1.ProjectedVolumeSourceDefaultMode),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(ServiceAccountTokenExpirationSeconds)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMap},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}
}

// mountToken mounts the token volume read-only at
// ServiceAccountTokenMountPath in every init and app container that has
// nothing mounted there yet, adding the volume when one needs it (or
// reusing a kube-api-access-* volume the pod already has).
func mountToken(pod *corev1.Pod) {
	name, has := "", false
	names := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		names[v.Name] = true
		if !has && strings.HasPrefix(v.Name, ServiceAccountVolumePrefix) {
			name, has = v.Name, true
		}
	}
	for name == "" || (!has && names[name]) {
		name = ServiceAccountVolumePrefix + utilrand.String(5)
	}
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: ServiceAccountTokenMountPath}
	needed := false
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			mounted := false
			for _, m := range cs[i].VolumeMounts {
				if m.MountPath == ServiceAccountTokenMountPath {
					mounted = true
					break
				}
			}
			if !mounted {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	if needed && !has {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: TokenVolumeSource()}})
	}
}
