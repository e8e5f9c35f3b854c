package namespace_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/namespace"
)

func runController(t *testing.T, c *cluster, opts ...namespace.Option) {
	opts = append([]namespace.Option{namespace.WithRequeueBase(10 * time.Millisecond), namespace.WithFinalizerEstimate(0)}, opts...)
	c.run(t, map[string]controller.NewFunc{
		namespace.Name: func(ctx *controller.Context) (controller.Controller, error) {
			return namespace.New(ctx, namespace.Config{Metadata: c.metadata}, opts...)
		},
	})
}

func createNamespace(t *testing.T, c *cluster, name string) {
	t.Helper()
	_, err := c.client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// fillNamespace creates objects of several resources in ns.
func fillNamespace(t *testing.T, c *cluster, ns string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.client.CoreV1().Pods(ns).Create(ctx, pod("unbound", ""), metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": "web"}
	_, err = c.client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod("", "").Spec},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func pod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers:                    []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
}

func namespaceGone(c *cluster, name string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}

// TestDeletesContentThenNamespace: every kind of content goes, then the
// namespace itself; other namespaces keep theirs.
func TestDeletesContentThenNamespace(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	createNamespace(t, c, "doomed")
	createNamespace(t, c, "kept")
	fillNamespace(t, c, "doomed")
	fillNamespace(t, c, "kept")
	runController(t, c)

	require.NoError(t, c.client.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}))
	eventually(t, "namespace doomed gone", namespaceGone(c, "doomed"))

	for _, list := range []func() (int, error){
		func() (int, error) {
			l, err := c.client.CoreV1().ConfigMaps("doomed").List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		func() (int, error) {
			l, err := c.client.CoreV1().Pods("doomed").List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		func() (int, error) {
			l, err := c.client.AppsV1().Deployments("doomed").List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		func() (int, error) {
			l, err := c.client.CoreV1().ServiceAccounts("doomed").List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
	} {
		n, err := list()
		require.NoError(t, err)
		assert.Zero(t, n, "content of a deleted namespace")
	}
	cms, err := c.client.CoreV1().ConfigMaps("kept").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, cms.Items, 1, "another namespace keeps its content")
	deps, err := c.client.AppsV1().Deployments("kept").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, deps.Items, 1)
}

// TestFinalizerHoldsNamespace: content held by a finalizer keeps the
// namespace, with Kubernetes' conditions saying why; releasing it lets the
// namespace go.
func TestFinalizerHoldsNamespace(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	createNamespace(t, c, "held")
	fillNamespace(t, c, "held")
	_, err := c.client.CoreV1().ConfigMaps("held").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned", Finalizers: []string{"example.com/hold"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	runController(t, c)

	require.NoError(t, c.client.CoreV1().Namespaces().Delete(ctx, "held", metav1.DeleteOptions{}))
	var ns *corev1.Namespace
	eventually(t, "remaining-content conditions", func(ctx context.Context) (bool, error) {
		var err error
		ns, err = c.client.CoreV1().Namespaces().Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := condition(ns, corev1.NamespaceFinalizersRemaining)
		return cond != nil && cond.Status == corev1.ConditionTrue, nil
	})
	assert.Equal(t, corev1.NamespaceTerminating, ns.Status.Phase)
	assert.Equal(t, []corev1.FinalizerName{corev1.FinalizerKubernetes}, ns.Spec.Finalizers)
	want := map[corev1.NamespaceConditionType][3]string{
		corev1.NamespaceDeletionDiscoveryFailure: {"False", "ResourcesDiscovered", "All resources successfully discovered"},
		corev1.NamespaceDeletionGVParsingFailure: {"False", "ParsedGroupVersions", "All legacy kube types successfully parsed"},
		corev1.NamespaceDeletionContentFailure:   {"False", "ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
		corev1.NamespaceContentRemaining:         {"True", "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances"},
		corev1.NamespaceFinalizersRemaining:      {"True", "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"},
	}
	for typ, w := range want {
		cond := condition(ns, typ)
		if assert.NotNil(t, cond, typ) {
			assert.Equal(t, w, [3]string{string(cond.Status), cond.Reason, cond.Message}, typ)
		}
	}
	cms, err := c.client.CoreV1().ConfigMaps("held").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, cms.Items, 1)
	assert.Equal(t, "pinned", cms.Items[0].Name)
	assert.NotNil(t, cms.Items[0].DeletionTimestamp)

	_, err = c.client.CoreV1().ConfigMaps("held").Patch(ctx, "pinned", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	eventually(t, "namespace held gone", namespaceGone(c, "held"))
}

// TestWaitsForGracefulPods: a pod on a node is only marked; the namespace
// waits (requeued after the grace estimate) until the node's kubelet
// confirms the pod's termination.
func TestWaitsForGracefulPods(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	createNamespace(t, c, "graceful")
	_, err := c.client.CoreV1().Pods("graceful").Create(ctx, pod("bound", "node-1"), metav1.CreateOptions{})
	require.NoError(t, err)
	runController(t, c)

	require.NoError(t, c.client.CoreV1().Namespaces().Delete(ctx, "graceful", metav1.DeleteOptions{}))
	eventually(t, "pod marked for deletion", func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods("graceful").Get(ctx, "bound", metav1.GetOptions{})
		return err == nil && p.DeletionTimestamp != nil, err
	})
	_, err = c.client.CoreV1().Namespaces().Get(ctx, "graceful", metav1.GetOptions{})
	require.NoError(t, err, "the namespace waits for its pod")
	// The kubelet confirms.
	require.NoError(t, c.client.CoreV1().Pods("graceful").Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	eventually(t, "namespace graceful gone", namespaceGone(c, "graceful"))
}

// TestKubectlDeleteNamespace: real kubectl deletes a namespace and waits
// until it is gone.
func TestKubectlDeleteNamespace(t *testing.T) {
	c := newCluster(t)
	createNamespace(t, c, "scratch")
	fillNamespace(t, c, "scratch")
	runController(t, c)
	code, stdout, stderr := c.kubectl(t, "delete", "namespace", "scratch", "--timeout=30s")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Equal(t, "namespace \"scratch\" deleted\n", stdout)
	_, err := c.client.CoreV1().Namespaces().Get(context.Background(), "scratch", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "kubectl waited for the namespace to go: %v", err)
}

func TestNewValidates(t *testing.T) {
	c := newCluster(t)
	m, err := controller.NewManager(controller.ManagerConfig{Client: c.client})
	require.NoError(t, err)
	_, err = namespace.New(m.Context(), namespace.Config{})
	assert.Error(t, err, "metadata client required")
	_, err = namespace.New(m.Context(), namespace.Config{Metadata: c.metadata}, namespace.WithRequeueBase(0))
	assert.Error(t, err)
	_, err = namespace.New(m.Context(), namespace.Config{Metadata: c.metadata}, namespace.WithFinalizerEstimate(-time.Second))
	assert.Error(t, err)
}

func condition(ns *corev1.Namespace, t corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	for i := range ns.Status.Conditions {
		if ns.Status.Conditions[i].Type == t {
			return &ns.Status.Conditions[i]
		}
	}
	return nil
}
