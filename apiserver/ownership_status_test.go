package apiserver

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/trace"
)

// TestStatusWritesLeaveEarlierRevisionsAlone: a status PUT builds the new
// object as a shallow copy of the stored one (copy on write: the spec is
// shared, not copied). For several kinds, with a mutating admission plugin
// that changes everything it can reach on the status subresource, and
// with a pod's birth trace kept from the write, the earlier revision must
// stay exactly as it was while concurrent readers go through every stored
// object (-race).
func TestStatusWritesLeaveEarlierRevisionsAlone(t *testing.T) {
	st := memory.New()
	defer st.Close()
	hook := &hookAdmission{}
	s := newOwnershipServer(t, st, hook)
	h := s.Handler()
	keyOf := func(group, resource, namespace, name string) string {
		return storage.Key(schema.GroupResource{Group: group, Resource: resource}, namespace, name)
	}
	var (
		podK  = podKey("p")
		nodeK = keyOf("", "nodes", "", "node-1")
		depK  = keyOf("apps", "deployments", "default", "shop")
		jobK  = keyOf("batch", "jobs", "default", "batch")
	)
	stop := make(chan struct{})
	readers := readShared(t, st, []string{podK, nodeK, depK, jobK}, stop)
	defer func() { close(stop); _ = st.Close(); readers.Wait() }()

	// Every status write goes through a plugin changing the metadata, the
	// spec and the status of the object it is given, in place.
	hook.set(func(a *admission.Attributes) error {
		if a.Subresource != "status" {
			return nil
		}
		m, err := meta.Accessor(a.Object)
		require.NoError(t, err)
		labels := m.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["admission"] = "status"
		m.SetLabels(labels)
		m.SetFinalizers(append(m.GetFinalizers(), "example.com/admission"))
		switch o := a.Object.(type) {
		case *corev1.Pod:
			o.Spec.Containers[0].Image = "admission:changed"
			o.Status.Message = "admitted"
		case *corev1.Node:
			o.Spec.Unschedulable = true
			o.Status.Phase = corev1.NodeRunning
		case *appsv1.Deployment:
			o.Spec.Template.Labels["admission"] = "status"
		case *batchv1.Job:
			o.Spec.Template.Spec.Containers[0].Image = "admission:changed"
		}
		return nil
	})

	traced := ownershipPod("p")
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	traced.Annotations[trace.Annotation] = trace.Encode(&trace.Trace{Steps: []trace.Step{{Name: trace.StepAdmitted, At: start}}})
	mustCall(t, h, http.MethodPost, podsPath, "application/json", asJSON(t, traced, "v1", "Pod"), http.StatusCreated)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"zone": "a"}},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}}}
	mustCall(t, h, http.MethodPost, "/api/v1/nodes", "application/json", asJSON(t, node, "v1", "Node"), http.StatusCreated)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"app": "shop"}}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "shop"}},
			Spec: ownershipPod("t").Spec}}}
	mustCall(t, h, http.MethodPost, "/apis/apps/v1/namespaces/default/deployments", "application/json", asJSON(t, dep, "apps/v1", "Deployment"), http.StatusCreated)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "batch", Annotations: map[string]string{"a": "1"}}, Spec: batchv1.JobSpec{
		Template: corev1.PodTemplateSpec{Spec: ownershipPod("t").Spec}}}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	mustCall(t, h, http.MethodPost, "/apis/batch/v1/namespaces/default/jobs", "application/json", asJSON(t, job, "batch/v1", "Job"), http.StatusCreated)

	get := func(key string) runtime.Object {
		obj, err := st.GetShared(context.Background(), key)
		require.NoError(t, err)
		return obj
	}
	// body is the stored object as a client sends it back, changed.
	body := func(key, apiVersion, kind string, change func(obj runtime.Object)) []byte {
		obj := get(key).DeepCopyObject()
		change(obj)
		return asJSON(t, obj, apiVersion, kind)
	}
	steps := []struct {
		name, key, path string
		body            func() []byte
		check           func(t *testing.T, old, cur runtime.Object)
	}{
		{"pod with a longer birth trace", podK, podsPath + "/p/status", func() []byte {
			return body(podK, "v1", "Pod", func(obj runtime.Object) {
				p := obj.(*corev1.Pod)
				p.Status.Phase = corev1.PodRunning
				p.Annotations = trace.WithStep(p.Annotations, trace.StepReady, start.Add(time.Second), "")
				p.Annotations["ignored"] = "through status"
			})
		}, func(t *testing.T, old, cur runtime.Object) {
			p, o := cur.(*corev1.Pod), old.(*corev1.Pod)
			assert.Equal(t, corev1.PodRunning, p.Status.Phase)
			assert.Equal(t, "admitted", p.Status.Message)
			tr, ok := trace.FromAnnotations(p.Annotations)
			require.True(t, ok)
			assert.True(t, tr.Has(trace.StepReady), "the write's longer trace is kept")
			assert.NotContains(t, p.Annotations, "ignored")
			assert.Equal(t, "team-a", p.Annotations["example.com/owner"])
			assert.Same(t, &o.Spec.Containers[0], &p.Spec.Containers[0], "the spec is shared, not copied")
		}},
		{"pod with the same birth trace", podK, podsPath + "/p/status", func() []byte {
			return body(podK, "v1", "Pod", func(obj runtime.Object) {
				obj.(*corev1.Pod).Status.Phase = corev1.PodSucceeded
			})
		}, func(t *testing.T, old, cur runtime.Object) {
			assert.Equal(t, corev1.PodSucceeded, cur.(*corev1.Pod).Status.Phase)
			assert.Equal(t, old.(*corev1.Pod).Annotations, cur.(*corev1.Pod).Annotations)
		}},
		{"node", nodeK, "/api/v1/nodes/node-1/status", func() []byte {
			return body(nodeK, "v1", "Node", func(obj runtime.Object) {
				n := obj.(*corev1.Node)
				n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
				n.Labels["zone"] = "b"
			})
		}, func(t *testing.T, old, cur runtime.Object) {
			n, o := cur.(*corev1.Node), old.(*corev1.Node)
			assert.Len(t, n.Status.Conditions, 1)
			assert.Equal(t, corev1.NodeRunning, n.Status.Phase)
			assert.Equal(t, o.Spec, n.Spec)
			assert.Equal(t, o.Labels, n.Labels)
			assert.Empty(t, n.Finalizers)
		}},
		{"deployment", depK, "/apis/apps/v1/namespaces/default/deployments/shop/status", func() []byte {
			return body(depK, "apps/v1", "Deployment", func(obj runtime.Object) {
				d := obj.(*appsv1.Deployment)
				d.Status.ObservedGeneration, d.Status.Replicas = d.Generation, 1
			})
		}, func(t *testing.T, old, cur runtime.Object) {
			d, o := cur.(*appsv1.Deployment), old.(*appsv1.Deployment)
			assert.Equal(t, int32(1), d.Status.Replicas)
			assert.Equal(t, o.Spec, d.Spec)
			assert.Equal(t, o.Generation, d.Generation)
			assert.Equal(t, o.Labels, d.Labels)
		}},
		{"job", jobK, "/apis/batch/v1/namespaces/default/jobs/batch/status", func() []byte {
			return body(jobK, "batch/v1", "Job", func(obj runtime.Object) {
				j := obj.(*batchv1.Job)
				now := metav1.NewTime(start)
				j.Status.Active, j.Status.StartTime = 1, &now
			})
		}, func(t *testing.T, old, cur runtime.Object) {
			j, o := cur.(*batchv1.Job), old.(*batchv1.Job)
			assert.Equal(t, int32(1), j.Status.Active)
			assert.Equal(t, o.Spec, j.Spec)
			assert.Equal(t, o.Annotations, j.Annotations)
		}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			old := get(step.key)
			snapshot := old.DeepCopyObject()
			mustCall(t, h, http.MethodPut, step.path, "application/json", step.body(), http.StatusOK)
			cur := get(step.key)
			assert.NotSame(t, old, cur, "a new revision is stored")
			assert.Equal(t, snapshot, old, "the earlier revision's object must not change")
			om, _ := meta.Accessor(old)
			cm, _ := meta.Accessor(cur)
			assert.NotEqual(t, om.GetResourceVersion(), cm.GetResourceVersion())
			assert.NotContains(t, cm.GetLabels(), "admission", "admission's metadata changes do not pass the status subresource")
			step.check(t, old, cur)
		})
	}
}
