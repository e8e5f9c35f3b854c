package admission

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func serviceAccount(ns, name string, pullSecrets ...string) *corev1.ServiceAccount {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, s := range pullSecrets {
		sa.ImagePullSecrets = append(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	return sa
}

func TestServiceAccountAdmit(t *testing.T) {
	store := newFakeStore()
	store.put(t, serviceAccountsGR, serviceAccount("team", "default"), serviceAccount("team", "builder", "regcred"))
	plugin, err := NewServiceAccount(ServiceAccountConfig{ServiceAccounts: store})
	require.NoError(t, err)

	mirror := func(p *corev1.Pod) *corev1.Pod {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
		return p
	}
	tests := []struct {
		name        string
		ns          string
		pod         *corev1.Pod
		wantAccount string
		wantPull    []corev1.LocalObjectReference
		code        int32
		message     string
	}{
		{name: "defaults to default", ns: "team", pod: newPod("web"), wantAccount: "default"},
		{
			name: "named account with pull secrets", ns: "team",
			pod:         &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{ServiceAccountName: "builder"}},
			wantAccount: "builder", wantPull: []corev1.LocalObjectReference{{Name: "regcred"}},
		},
		{
			name: "pod's own pull secrets win", ns: "team",
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{
				ServiceAccountName: "builder", ImagePullSecrets: []corev1.LocalObjectReference{{Name: "mine"}},
			}},
			wantAccount: "builder", wantPull: []corev1.LocalObjectReference{{Name: "mine"}},
		},
		{
			name: "deprecated field is honoured", ns: "team",
			pod:         &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{DeprecatedServiceAccount: "builder"}},
			wantAccount: "builder", wantPull: []corev1.LocalObjectReference{{Name: "regcred"}},
		},
		{
			name: "missing account", ns: "team",
			pod:     &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{ServiceAccountName: "ghost"}},
			code:    http.StatusForbidden,
			message: `pods "web" is forbidden: error looking up service account team/ghost: serviceaccount "ghost" not found`,
		},
		{
			name: "missing default account", ns: "empty", pod: newPod("web"),
			code:    http.StatusForbidden,
			message: `pods "web" is forbidden: error looking up service account empty/default: serviceaccount "default" not found`,
		},
		{name: "mirror pod untouched", ns: "empty", pod: mirror(newPod("static-web")), wantAccount: ""},
		{
			name: "mirror pod may not name an account", ns: "team",
			pod:     mirror(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "static-web"}, Spec: corev1.PodSpec{ServiceAccountName: "builder"}}),
			code:    http.StatusForbidden,
			message: `pods "static-web" is forbidden: a mirror pod may not reference service accounts`,
		},
		{
			name: "mirror pod may not use secrets", ns: "team",
			pod: mirror(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "static-web"}, Spec: corev1.PodSpec{
				Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}}},
			}}),
			code:    http.StatusForbidden,
			message: `pods "static-web" is forbidden: a mirror pod may not reference secrets`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := createPod(tt.ns, tt.pod)
			err := plugin.Admit(context.Background(), req)
			if tt.code != 0 {
				requireStatus(t, err, tt.code, tt.message)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantAccount, tt.pod.Spec.ServiceAccountName)
			assert.Equal(t, tt.wantAccount, tt.pod.Spec.DeprecatedServiceAccount)
			assert.Equal(t, tt.wantPull, tt.pod.Spec.ImagePullSecrets)
			assert.NoError(t, plugin.Validate(context.Background(), req), "an admitted pod validates")
		})
	}
}

func TestServiceAccountValidate(t *testing.T) {
	store := newFakeStore()
	store.put(t, serviceAccountsGR, serviceAccount("team", "default"))
	plugin, err := NewServiceAccount(ServiceAccountConfig{ServiceAccounts: store})
	require.NoError(t, err)

	// A later mutating plugin switched the account to one that does not exist.
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{ServiceAccountName: "ghost"}}
	requireStatus(t, plugin.Validate(context.Background(), createPod("team", p)), http.StatusForbidden,
		`pods "web" is forbidden: error looking up service account team/ghost: serviceaccount "ghost" not found`)

	requireStatus(t, plugin.Validate(context.Background(), createPod("team", newPod("bare"))), http.StatusForbidden,
		`pods "bare" is forbidden: no service account specified for pod team/bare`)
}

func TestServiceAccountIgnores(t *testing.T) {
	plugin, err := NewServiceAccount(ServiceAccountConfig{ServiceAccounts: newFakeStore()})
	require.NoError(t, err)
	ctx := context.Background()

	update := attrs(Update, "pods", "team", "web", newPod("web"), newPod("web"))
	assert.NoError(t, plugin.Admit(ctx, update))
	status := createPod("team", newPod("web"))
	status.Subresource = "status"
	assert.NoError(t, plugin.Admit(ctx, status))
	assert.NoError(t, plugin.Admit(ctx, attrs(Create, "configmaps", "team", "c", &corev1.ConfigMap{}, nil)))

	wrongType := attrs(Create, "pods", "team", "web", &corev1.ConfigMap{}, nil)
	assert.True(t, apierrors.IsBadRequest(plugin.Admit(ctx, wrongType)))

	_, err = NewServiceAccount(ServiceAccountConfig{})
	assert.Error(t, err)
}

func TestPodSecretNames(t *testing.T) {
	spec := &corev1.PodSpec{
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
		Containers: []corev1.Container{{
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "envfrom"}}}},
			Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "env"}, Key: "k"}}}},
		}},
		Volumes: []corev1.Volume{
			{VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol"}}},
			{VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj"}}},
			}}}},
			{VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi"}}}},
			{VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
		},
	}
	assert.ElementsMatch(t, []string{"pull", "envfrom", "env", "vol", "proj", "csi"}, podSecretNames(spec))
	assert.Nil(t, podSecretNames(&corev1.PodSpec{}))
}
