package admission

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/storage"
)

// ServiceAccountName names the ServiceAccount plugin.
const ServiceAccountName = "ServiceAccount"

// DefaultServiceAccount is the account pods run as when they name none; the
// API server creates it in every new namespace.
const DefaultServiceAccount = "default"

// ServiceAccount is Kubernetes' ServiceAccount admission plugin: on pod
// creation it
//
//   - defaults spec.serviceAccountName to "default" (keeping the deprecated
//     spec.serviceAccount field equal to it, as the v1 API does);
//   - rejects the pod with 403 when the account does not exist
//     (`error looking up service account ns/x: serviceaccount "x" not found`);
//   - copies the account's imagePullSecrets into a pod that has none;
//   - with MountServiceAccountToken, mounts the account's token (see
//     mountToken).
//
// Mirror pods (annotation kubernetes.io/config.mirror) are not modified;
// they may not reference service accounts or secrets at all.
type ServiceAccount struct {
	accounts ObjectGetter
	mount    bool
}

var (
	_ Admitter  = (*ServiceAccount)(nil)
	_ Validator = (*ServiceAccount)(nil)
	_ Handler   = (*ServiceAccount)(nil)
	_ Namer     = (*ServiceAccount)(nil)
)

// ServiceAccountConfig configures NewServiceAccount.
type ServiceAccountConfig struct {
	// ServiceAccounts reads service accounts from storage. Required.
	ServiceAccounts ObjectGetter
	// MountServiceAccountToken adds the kube-api-access-<random>
	// projected volume (token, ca.crt, namespace) at
	// /var/run/secrets/kubernetes.io/serviceaccount to pods whose account
	// automounts (see mountToken). Off for API servers that issue no
	// tokens: the kubelet could not fill the volume.
	MountServiceAccountToken bool
}

// NewServiceAccount returns the ServiceAccount plugin.
func NewServiceAccount(cfg ServiceAccountConfig) (*ServiceAccount, error) {
	if cfg.ServiceAccounts == nil {
		return nil, errors.New("admission: ServiceAccount needs a service account store")
	}
	return &ServiceAccount{accounts: cfg.ServiceAccounts, mount: cfg.MountServiceAccountToken}, nil
}

// Name implements Namer.
func (*ServiceAccount) Name() string { return ServiceAccountName }

// Handles implements Handler: pod creation only.
func (*ServiceAccount) Handles(op Operation) bool { return op == Create }

// Admit defaults and checks the pod's service account, then validates.
func (s *ServiceAccount) Admit(ctx context.Context, a *Attributes) error {
	pod, err := s.pod(a)
	if pod == nil || err != nil {
		return err
	}
	if isMirrorPod(pod) {
		return validateMirrorPod(a, pod)
	}
	spec := &pod.Spec
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = DefaultServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName

	sa, err := s.lookup(ctx, a, spec.ServiceAccountName)
	if err != nil {
		return err
	}
	if len(spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		spec.ImagePullSecrets = make([]corev1.LocalObjectReference, len(sa.ImagePullSecrets))
		for i, ref := range sa.ImagePullSecrets {
			spec.ImagePullSecrets[i] = corev1.LocalObjectReference{Name: ref.Name}
		}
	}
	if s.mount && automounts(sa, pod) {
		mountToken(pod)
	}
	return nil
}

// Validate re-checks a pod after all mutating plugins ran: mirror pods
// reference no accounts or secrets, other pods name an existing account.
// Put the plugin among the validators too when later mutating plugins may
// change spec.serviceAccountName.
func (s *ServiceAccount) Validate(ctx context.Context, a *Attributes) error {
	pod, err := s.pod(a)
	if pod == nil || err != nil {
		return err
	}
	if isMirrorPod(pod) {
		return validateMirrorPod(a, pod)
	}
	if pod.Spec.ServiceAccountName == "" {
		return NewForbidden(a, fmt.Errorf("no service account specified for pod %s/%s", a.Namespace, pod.Name))
	}
	_, err = s.lookup(ctx, a, pod.Spec.ServiceAccountName)
	return err
}

// pod returns the pod a request creates, nil when the plugin ignores it.
func (*ServiceAccount) pod(a *Attributes) (*corev1.Pod, error) {
	if a.Resource.GroupResource() != podsGR || a.Subresource != "" || a.Operation != Create {
		return nil, nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil, apierrors.NewBadRequest("resource was marked with kind Pod but was unable to be converted")
	}
	return pod, nil
}

func (s *ServiceAccount) lookup(ctx context.Context, a *Attributes, name string) (*corev1.ServiceAccount, error) {
	sa, found, err := getTyped[*corev1.ServiceAccount](ctx, s.accounts, storage.Key(serviceAccountsGR, a.Namespace, name))
	if err == nil && !found {
		// The informer lister Kubernetes reads from names the resource in
		// the singular in its NotFound errors.
		err = apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccount"}, name)
	}
	if err != nil {
		return nil, NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, name, err))
	}
	return sa, nil
}

func isMirrorPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}

func validateMirrorPod(a *Attributes, pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return NewForbidden(a, errors.New("a mirror pod may not reference service accounts"))
	}
	if podSecretNames(&pod.Spec) != nil {
		return NewForbidden(a, errors.New("a mirror pod may not reference secrets"))
	}
	return nil
}

// podSecretNames lists the secrets a pod spec references: pull secrets,
// env and envFrom of every container, and volumes.
func podSecretNames(spec *corev1.PodSpec) []string {
	var names []string
	add := func(n string) {
		if n != "" {
			names = append(names, n)
		}
	}
	addRef := func(r *corev1.LocalObjectReference) {
		if r != nil {
			add(r.Name)
		}
	}
	for _, r := range spec.ImagePullSecrets {
		add(r.Name)
	}
	visit := func(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
		for _, e := range envFrom {
			if e.SecretRef != nil {
				add(e.SecretRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			visit(c.Env, c.EnvFrom)
		}
	}
	for _, c := range spec.EphemeralContainers {
		visit(c.Env, c.EnvFrom)
	}
	for _, v := range spec.Volumes {
		src := v.VolumeSource
		switch {
		case src.Secret != nil:
			add(src.Secret.SecretName)
		case src.Projected != nil:
			for _, p := range src.Projected.Sources {
				if p.Secret != nil {
					add(p.Secret.Name)
				}
			}
		case src.CSI != nil:
			addRef(src.CSI.NodePublishSecretRef)
		case src.AzureFile != nil:
			add(src.AzureFile.SecretName)
		case src.CephFS != nil:
			addRef(src.CephFS.SecretRef)
		case src.Cinder != nil:
			addRef(src.Cinder.SecretRef)
		case src.FlexVolume != nil:
			addRef(src.FlexVolume.SecretRef)
		case src.ISCSI != nil:
			addRef(src.ISCSI.SecretRef)
		case src.RBD != nil:
			addRef(src.RBD.SecretRef)
		case src.ScaleIO != nil:
			addRef(src.ScaleIO.SecretRef)
		case src.StorageOS != nil:
			addRef(src.StorageOS.SecretRef)
		}
	}
	return names
}
