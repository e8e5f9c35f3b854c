package app_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

func startInsecure(t *testing.T, mutate func(*app.Options)) (kubernetes.Interface, *warningRecorder) {
	t.Helper()
	opts := app.DefaultOptions()
	opts.Store, opts.Port, opts.DataDir = app.StoreMemory, 0, t.TempDir()
	opts.Secure.Insecure = true
	opts.Logger = slog.New(slog.DiscardHandler)
	if mutate != nil {
		mutate(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := app.New(ctx, opts)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	w := &warningRecorder{}
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1, WarningHandler: w})
	require.NoError(t, err)
	return c, w
}

func privilegedPod(name string) *corev1.Pod {
	yes := true
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: &yes}}}}}
}

func TestPodSecurityRestrictedRejectsPrivilegedPod(t *testing.T) {
	c, warn := startInsecure(t, nil)
	ctx := context.Background()
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "locked",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.CoreV1().Pods("locked").Create(ctx, privilegedPod("priv"), metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Equal(t, `pods "priv" is forbidden: violates PodSecurity "restricted:latest": `+
		`privileged (container "c" must not set securityContext.privileged=true), `+
		`allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), `+
		`unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), `+
		`runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), `+
		`seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`, err.Error())

	// baseline enforce with restricted warn: a plain pod is admitted with
	// warnings; a privileged one is still rejected.
	_, err = c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "warned",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "restricted"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	_, err = c.CoreV1().Pods("warned").Create(ctx, plain, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Contains(t, warn.all(), `would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`)
	_, err = c.CoreV1().Pods("warned").Create(ctx, privilegedPod("priv"), metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), `violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`)

	// Unlabelled namespaces are privileged.
	_, err = c.CoreV1().Pods("default").Create(ctx, privilegedPod("priv"), metav1.CreateOptions{})
	require.NoError(t, err)
	// Invalid labels are rejected on the namespace.
	_, err = c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "typo",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "strict"}}}, metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pod-security.kubernetes.io/enforce")

	// Labelling a namespace warns about its existing pods.
	ns, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	require.NoError(t, err)
	ns.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
	_, err = c.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Contains(t, warn.all(), `existing pods in namespace "default" violate the new PodSecurity enforce level "baseline:latest"`)
}

func TestPodSecurityDisabled(t *testing.T) {
	c, _ := startInsecure(t, func(o *app.Options) { o.Authorization.DisableAdmissionPlugins = []string{"PodSecurity"} })
	ctx := context.Background()
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "locked",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.CoreV1().Pods("locked").Create(ctx, privilegedPod("priv"), metav1.CreateOptions{})
	require.NoError(t, err)
}

func TestAdmissionPluginsFlags(t *testing.T) {
	all := app.DefaultAdmissionPlugins()
	tests := []struct {
		name            string
		enable, disable []string
		want            []string
		err             string
	}{
		{name: "defaults", want: all},
		{name: "disable", disable: []string{"NodeRestriction", "ResourceQuota"}, want: []string{"NamespaceLifecycle", "LimitRanger",
			"ServiceAccount", "PodSecurity", "Priority", "DefaultTolerationSeconds", "MutatingAdmissionWebhook", "ValidatingAdmissionWebhook"}},
		{name: "enable a default", enable: []string{"PodSecurity"}, want: all},
		{name: "unknown", enable: []string{"AlwaysPullImages"}, err: `unknown admission plugin "AlwaysPullImages"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := app.AdmissionPlugins(app.AuthorizationOptions{EnableAdmissionPlugins: tt.enable, DisableAdmissionPlugins: tt.disable})
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNewAuthorizerModes(t *testing.T) {
	st := memory.New()
	defer st.Close()
	for _, modes := range [][]string{nil, {"RBAC"}, {"Node", "RBAC"}, {"AlwaysAllow"}, {"AlwaysDeny"}} {
		_, err := app.NewAuthorizer(st, app.AuthorizationOptions{Modes: modes}, nil)
		assert.NoError(t, err, "%v", modes)
	}
	_, err := app.NewAuthorizer(st, app.AuthorizationOptions{Modes: []string{"ABAC"}}, nil)
	assert.ErrorContains(t, err, `unknown mode "ABAC"`)
	_, err = app.NewAuthorizer(st, app.AuthorizationOptions{Modes: []string{"Webhook"}}, nil)
	assert.ErrorContains(t, err, "--authorization-webhook-config-file")
	_, err = app.NewAuthorizer(st, app.AuthorizationOptions{Modes: []string{"RBAC", "RBAC"}}, nil)
	assert.ErrorContains(t, err, "given twice")
}
