package apiserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "web", Image: "registry.local/web:1.0",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
		}}},
	}
}

func TestCreatePodIsPendingAndUnbound(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	pod, err := ts.client.CoreV1().Pods("default").Create(ctx, testPod("web-1"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PodPending, pod.Status.Phase)
	assert.Empty(t, pod.Spec.NodeName)
	assert.NotEmpty(t, pod.UID)
	assert.NotEmpty(t, pod.ResourceVersion)
	assert.False(t, pod.CreationTimestamp.IsZero())
	assert.Equal(t, corev1.PodQOSBestEffort, pod.Status.QOSClass)

	_, err = ts.client.CoreV1().Pods("default").Create(ctx, testPod("web-1"), metav1.CreateOptions{})
	require.True(t, apierrors.IsAlreadyExists(err), "got %v", err)

	got, err := ts.client.CoreV1().Pods("default").Get(ctx, "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, pod.UID, got.UID)

	_, err = ts.client.CoreV1().Pods("default").Get(ctx, "missing", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "got %v", err)
}

func TestGenerateName(t *testing.T) {
	ts := newTestServer(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cfg-"}}
	out, err := ts.client.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Regexp(t, `^cfg-[a-z0-9]{5}$`, out.Name)
}

func TestUpdateConflictOnStaleResourceVersion(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	cms := ts.client.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	first := cm.DeepCopy()
	first.Data["k"] = "2"
	updated, err := cms.Update(ctx, first, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, cm.ResourceVersion, updated.ResourceVersion)

	stale := cm.DeepCopy()
	stale.Data["k"] = "3"
	_, err = cms.Update(ctx, stale, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "got %v", err)
	assert.Contains(t, err.Error(), "the object has been modified")

	// An update that changes nothing does not bump the resourceVersion.
	same, err := cms.Update(ctx, updated, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, updated.ResourceVersion, same.ResourceVersion)
}

func TestPatchTypes(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	pods := ts.client.CoreV1().Pods("default")
	_, err := pods.Create(ctx, testPod("p"), metav1.CreateOptions{})
	require.NoError(t, err)

	tests := []struct {
		name  string
		pt    types.PatchType
		patch string
		check func(t *testing.T, p *corev1.Pod)
	}{
		{"merge adds label", types.MergePatchType, `{"metadata":{"labels":{"tier":"front"}}}`,
			func(t *testing.T, p *corev1.Pod) {
				assert.Equal(t, "front", p.Labels["tier"])
				assert.Equal(t, "web", p.Labels["app"])
			}},
		{"strategic merges containers by name", types.StrategicMergePatchType,
			`{"spec":{"containers":[{"name":"web","image":"registry.local/web:2.0"}]}}`,
			func(t *testing.T, p *corev1.Pod) {
				require.Len(t, p.Spec.Containers, 1)
				assert.Equal(t, "registry.local/web:2.0", p.Spec.Containers[0].Image)
				assert.Len(t, p.Spec.Containers[0].Ports, 1, "strategic merge keeps the other fields")
			}},
		{"json patch replaces annotation", types.JSONPatchType,
			`[{"op":"add","path":"/metadata/annotations","value":{"a":"b"}}]`,
			func(t *testing.T, p *corev1.Pod) { assert.Equal(t, "b", p.Annotations["a"]) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := pods.Patch(ctx, "p", tt.pt, []byte(tt.patch), metav1.PatchOptions{})
			require.NoError(t, err)
			tt.check(t, p)
		})
	}

	_, err = pods.Patch(ctx, "p", types.JSONPatchType, []byte(`[{"op":"test","path":"/metadata/name","value":"other"}]`), metav1.PatchOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "failed json patch test op: got %v", err)
	_, err = pods.Patch(ctx, "p", types.MergePatchType, []byte(`{not json`), metav1.PatchOptions{})
	require.True(t, apierrors.IsBadRequest(err), "got %v", err)
	_, err = pods.Patch(ctx, "missing", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	require.True(t, apierrors.IsNotFound(err), "got %v", err)
}

func TestDeletePods(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	pods := ts.client.CoreV1().Pods("default")

	// An unbound pod has no kubelet to wait for: it goes at once.
	_, err := pods.Create(ctx, testPod("unbound"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, pods.Delete(ctx, "unbound", metav1.DeleteOptions{}))
	_, err = pods.Get(ctx, "unbound", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))

	// A bound pod is marked and stays until the kubelet confirms (grace 0).
	_, err = pods.Create(ctx, testPod("bound"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bound"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, metav1.CreateOptions{}))
	require.NoError(t, pods.Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](20)}))
	p, err := pods.Get(ctx, "bound", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, p.DeletionTimestamp)
	assert.Equal(t, int64(20), *p.DeletionGracePeriodSeconds)
	require.NoError(t, pods.Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	_, err = pods.Get(ctx, "bound", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "got %v", err)
}

func TestDeleteWithFinalizersAndPreconditions(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	cms := ts.client.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "f", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{})
	require.NoError(t, err)

	err = cms.Delete(ctx, "f", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("wrong"))}})
	require.True(t, apierrors.IsConflict(err), "got %v", err)

	require.NoError(t, cms.Delete(ctx, "f", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}}))
	held, err := cms.Get(ctx, "f", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, held.DeletionTimestamp)

	_, err = cms.Patch(ctx, "f", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	_, err = cms.Get(ctx, "f", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "removing the last finalizer completes the deletion: %v", err)
}

func TestPropagationPolicyFinalizers(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	deps := ts.client.AppsV1().Deployments("default")
	for _, tt := range []struct {
		policy    metav1.DeletionPropagation
		finalizer string
	}{
		{metav1.DeletePropagationOrphan, metav1.FinalizerOrphanDependents},
		{metav1.DeletePropagationForeground, metav1.FinalizerDeleteDependents},
	} {
		name := "d-" + strings.ToLower(string(tt.policy))
		_, err := deps.Create(ctx, testDeployment(name), metav1.CreateOptions{})
		require.NoError(t, err)
		require.NoError(t, deps.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &tt.policy}))
		d, err := deps.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Contains(t, d.Finalizers, tt.finalizer)
		assert.NotNil(t, d.DeletionTimestamp)
	}
	_, err := deps.Create(ctx, testDeployment("bg"), metav1.CreateOptions{})
	require.NoError(t, err)
	bg := metav1.DeletePropagationBackground
	require.NoError(t, deps.Delete(ctx, "bg", metav1.DeleteOptions{PropagationPolicy: &bg}))
	_, err = deps.Get(ctx, "bg", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))
}

func testDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:1"}}},
			},
		},
	}
}

func TestBinding(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	pods := ts.client.CoreV1().Pods("default")
	_, err := pods.Create(ctx, testPod("b"), metav1.CreateOptions{})
	require.NoError(t, err)
	bind := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	require.NoError(t, pods.Bind(ctx, bind, metav1.CreateOptions{}))
	p, err := pods.Get(ctx, "b", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "n1", p.Spec.NodeName)
	require.Len(t, p.Status.Conditions, 1)
	assert.Equal(t, corev1.PodScheduled, p.Status.Conditions[0].Type)
	assert.Equal(t, corev1.ConditionTrue, p.Status.Conditions[0].Status)

	err = pods.Bind(ctx, bind, metav1.CreateOptions{})
	require.True(t, apierrors.IsConflict(err), "second binding: %v", err)
	assert.Contains(t, err.Error(), "already assigned to node")
}

func TestStatusSubresourceIsolation(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	pods := ts.client.CoreV1().Pods("default")
	p, err := pods.Create(ctx, testPod("s"), metav1.CreateOptions{})
	require.NoError(t, err)

	// Status written through the main resource is ignored...
	p.Status.Phase = corev1.PodRunning
	p.Labels["x"] = "y"
	p, err = pods.Update(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PodPending, p.Status.Phase)
	assert.Equal(t, "y", p.Labels["x"])

	// ...and spec written through status is too.
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = "10.244.0.5"
	p.Labels["x"] = "ignored"
	p, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PodRunning, p.Status.Phase)
	assert.Equal(t, "y", p.Labels["x"])

	list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "status.podIP=10.244.0.5"})
	require.NoError(t, err)
	assert.Len(t, list.Items, 1)
}

func TestScaleSubresource(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	deps := ts.client.AppsV1().Deployments("default")
	d, err := deps.Create(ctx, testDeployment("web"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), d.Generation)

	scale, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), scale.Spec.Replicas)
	assert.Equal(t, "app=web", scale.Status.Selector)

	scale.Spec.Replicas = 5
	_, err = deps.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
	require.NoError(t, err)

	_, err = deps.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}, "scale")
	require.NoError(t, err)
	d, err = deps.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), *d.Spec.Replicas)
	assert.Equal(t, int64(3), d.Generation, "each spec change bumps the generation")

	stale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: scale.ResourceVersion}, Spec: autoscalingv1.ScaleSpec{Replicas: 9}}
	_, err = deps.UpdateScale(ctx, "web", stale, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "stale scale: %v", err)
}

func TestPaginationAndSelectors(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	pods := ts.client.CoreV1().Pods("default")
	for i := 0; i < 25; i++ {
		p := testPod(fmt.Sprintf("p-%02d", i))
		if i%2 == 0 {
			p.Labels["parity"] = "even"
		}
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	var names []string
	opts := metav1.ListOptions{Limit: 10}
	pages := 0
	for {
		list, err := pods.List(ctx, opts)
		require.NoError(t, err)
		pages++
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	assert.Equal(t, 3, pages)
	assert.Len(t, names, 25)
	assert.Equal(t, "p-00", names[0])
	assert.Equal(t, "p-24", names[24])

	even, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "parity=even"})
	require.NoError(t, err)
	assert.Len(t, even.Items, 13)

	byName, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=p-03"})
	require.NoError(t, err)
	assert.Len(t, byName.Items, 1)

	unbound, err := ts.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=,status.phase=Pending"})
	require.NoError(t, err)
	assert.Len(t, unbound.Items, 25)

	_, err = pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.bogus=1"})
	require.True(t, apierrors.IsBadRequest(err), "got %v", err)

	_, err = pods.List(ctx, metav1.ListOptions{Continue: "garbage"})
	require.True(t, apierrors.IsBadRequest(err) || apierrors.IsResourceExpired(err), "got %v", err)
}

func TestProtobufClient(t *testing.T) {
	ts := newTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc := ts.protobufClient(t)
	w, err := pc.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	_, err = pc.CoreV1().Pods("default").Create(ctx, testPod("pb"), metav1.CreateOptions{})
	require.NoError(t, err)
	list, err := pc.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	select {
	case ev := <-w.ResultChan():
		pod, ok := ev.Object.(*corev1.Pod)
		require.True(t, ok, "got %T", ev.Object)
		assert.Equal(t, "pb", pod.Name)
	case <-ctx.Done():
		t.Fatal("no watch event over protobuf")
	}
}

func TestNodeKeepsStatusOnCreate(t *testing.T) {
	ts := newTestServer(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Capacity:   corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	out, err := ts.client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Len(t, out.Status.Conditions, 1)
	assert.Equal(t, corev1.ConditionTrue, out.Status.Conditions[0].Status)
	allocatable := out.Status.Allocatable[corev1.ResourcePods]
	assert.Equal(t, int64(110), allocatable.Value(), "allocatable defaults to capacity")
}
