package app_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

func newClient(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	st := memory.New()
	cfg, err := app.DefaultConfig(st, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	srv, err := apiserver.New(*cfg)
	require.NoError(t, err)
	require.NoError(t, srv.Bootstrap(context.Background()))
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); _ = st.Close() })
	c, err := kubernetes.NewForConfig(&rest.Config{Host: hs.URL, QPS: -1})
	require.NoError(t, err)
	return c
}

func pod(name string, cpu string) *corev1.Pod {
	c := corev1.Container{Name: "c", Image: "img:1"}
	if cpu != "" {
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi")}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

func TestNamespaceLifecycleAndServiceAccount(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	_, err := c.CoreV1().Pods("nope").Create(ctx, pod("p", ""), metav1.CreateOptions{})
	require.True(t, apierrors.IsNotFound(err), "got %v", err)
	assert.Contains(t, err.Error(), `namespaces "nope" not found`)

	_, err = c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	p, err := c.CoreV1().Pods("team").Create(ctx, pod("p", ""), metav1.CreateOptions{})
	require.NoError(t, err, "the default service account exists as soon as the namespace does")
	assert.Equal(t, "default", p.Spec.ServiceAccountName)

	bad := pod("q", "")
	bad.Spec.ServiceAccountName = "robot"
	_, err = c.CoreV1().Pods("team").Create(ctx, bad, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "got %v", err)

	err = c.CoreV1().Namespaces().Delete(ctx, "kube-system", metav1.DeleteOptions{})
	require.True(t, apierrors.IsForbidden(err), "got %v", err)

	require.NoError(t, c.CoreV1().Namespaces().Delete(ctx, "team", metav1.DeleteOptions{}))
	ns, err := c.CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.NamespaceTerminating, ns.Status.Phase)
	_, err = c.CoreV1().ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "got %v", err)
	assert.Contains(t, err.Error(), "because it is being terminated")
}

func TestResourceQuotaAdmission(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	_, err := c.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2"), corev1.ResourceLimitsCPU: resource.MustParse("1")}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	_, err = c.CoreV1().Pods("default").Create(ctx, pod("no-limits", ""), metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "got %v", err)
	assert.Contains(t, err.Error(), "must specify limits.cpu")

	for _, n := range []string{"a", "b"} {
		_, err := c.CoreV1().Pods("default").Create(ctx, pod(n, "200m"), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = c.CoreV1().Pods("default").Create(ctx, pod("c", "200m"), metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "got %v", err)
	assert.Contains(t, err.Error(), "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2")

	q, err := c.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
	require.NoError(t, err)
	used := q.Status.Used[corev1.ResourcePods]
	assert.Equal(t, int64(2), used.Value())

	// Deleting frees the quota again.
	require.NoError(t, c.CoreV1().Pods("default").Delete(ctx, "a", metav1.DeleteOptions{}))
	_, err = c.CoreV1().Pods("default").Create(ctx, pod("c", "200m"), metav1.CreateOptions{})
	require.NoError(t, err)
}

func TestLimitRangeAdmission(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	_, err := c.CoreV1().LimitRanges("default").Create(ctx, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "lr"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			Max:            corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	p, err := c.CoreV1().Pods("default").Create(ctx, pod("defaulted", ""), metav1.CreateOptions{})
	require.NoError(t, err)
	lim := p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]
	req := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	assert.Equal(t, "500m", lim.String())
	assert.Equal(t, "100m", req.String())
	assert.Equal(t, corev1.PodQOSBurstable, p.Status.QOSClass)

	_, err = c.CoreV1().Pods("default").Create(ctx, pod("big", "2"), metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "got %v", err)
	assert.Contains(t, err.Error(), "maximum cpu usage per Container is 1, but limit is 2")
}

func TestJobSelectorGenerated(t *testing.T) {
	c := newClient(t)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "img:1"}}}}}}
	out, err := c.BatchV1().Jobs("default").Create(context.Background(), job, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotNil(t, out.Spec.Selector)
	assert.Equal(t, string(out.UID), out.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel])
	assert.Equal(t, "j", out.Spec.Template.Labels[batchv1.JobNameLabel])
}
