package defaults

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// volume defaults one pod volume: a volume with no source at all is an
// emptyDir, files projected into volumes get mode 0644, and the legacy
// in-tree plugins get their documented defaults.
func volume(v *corev1.Volume) {
	if noSource(&v.VolumeSource) {
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	src := &v.VolumeSource
	if src.HostPath != nil {
		hostPath(src.HostPath)
	}
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		src.Secret.DefaultMode = ptrTo(corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		src.ConfigMap.DefaultMode = ptrTo(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if src.DownwardAPI != nil {
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = ptrTo(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		for i := range src.DownwardAPI.Items {
			fieldSelector(src.DownwardAPI.Items[i].FieldRef)
		}
	}
	if src.Projected != nil {
		projected(src.Projected)
	}
	if src.Image != nil && src.Image.PullPolicy == "" {
		src.Image.PullPolicy = PullPolicyFor(src.Image.Reference)
	}
	if src.Ephemeral != nil && src.Ephemeral.VolumeClaimTemplate != nil {
		pvcSpec(&src.Ephemeral.VolumeClaimTemplate.Spec)
	}
	legacyVolume(src)
}

// noSource reports whether no volume source is set.
func noSource(s *corev1.VolumeSource) bool {
	return *s == corev1.VolumeSource{}
}

func hostPath(h *corev1.HostPathVolumeSource) {
	if h.Type == nil {
		h.Type = ptrTo(corev1.HostPathUnset)
	}
}

func projected(p *corev1.ProjectedVolumeSource) {
	if p.DefaultMode == nil {
		p.DefaultMode = ptrTo(corev1.ProjectedVolumeSourceDefaultMode)
	}
	for i := range p.Sources {
		s := &p.Sources[i]
		if s.DownwardAPI != nil {
			for j := range s.DownwardAPI.Items {
				fieldSelector(s.DownwardAPI.Items[j].FieldRef)
			}
		}
		if s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds == nil {
			s.ServiceAccountToken.ExpirationSeconds = ptrTo(int64(time.Hour / time.Second))
		}
	}
}

// legacyVolume applies the declarative defaults of the deprecated in-tree
// volume plugins that still have API fields.
func legacyVolume(src *corev1.VolumeSource) {
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = "default"
	}
	if r := src.RBD; r != nil {
		rbd(&r.RBDPool, &r.RadosUser, &r.Keyring)
	}
	if a := src.AzureDisk; a != nil {
		azureDisk(a)
	}
	if s := src.ScaleIO; s != nil {
		if s.StorageMode == "" {
			s.StorageMode = "ThinProvisioned"
		}
		if s.FSType == "" {
			s.FSType = "xfs"
		}
	}
}

func rbd(pool, user, keyring *string) {
	if *pool == "" {
		*pool = "rbd"
	}
	if *user == "" {
		*user = "admin"
	}
	if *keyring == "" {
		*keyring = "/etc/ceph/keyring"
	}
}

func azureDisk(a *corev1.AzureDiskVolumeSource) {
	if a.CachingMode == nil {
		a.CachingMode = ptrTo(corev1.AzureDataDiskCachingReadWrite)
	}
	if a.FSType == nil {
		a.FSType = ptrTo("ext4")
	}
	if a.ReadOnly == nil {
		a.ReadOnly = ptrTo(false)
	}
	if a.Kind == nil {
		a.Kind = ptrTo(corev1.AzureSharedBlobDisk)
	}
}

// pvcSpec defaults a claim spec (also used for claim templates).
func pvcSpec(s *corev1.PersistentVolumeClaimSpec) {
	if s.VolumeMode == nil {
		s.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
	}
	roundUpResources(s.Resources.Limits)
	roundUpResources(s.Resources.Requests)
}
