package deployment_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller/deployment"
)

func getDeployment(t *testing.T, e *env, name string) *appsv1.Deployment {
	t.Helper()
	d, err := e.Client.AppsV1().Deployments("default").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return d
}

// waitObserved waits until the controller has processed the Deployment's
// current generation.
func waitObserved(t *testing.T, e *env, name string) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	waitFor(t, "the generation to be observed", func(ctx context.Context) (bool, error) {
		var err error
		d, err = e.Client.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil && d.Status.ObservedGeneration >= d.Generation, err
	})
	return d
}

func TestPausedDeployment(t *testing.T) {
	e := newEnv(t)
	_, err := e.Client.AppsV1().Deployments("default").Create(t.Context(), newDeployment("web", 2, "img:1"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitComplete(t, e.Client, "web")

	d := getDeployment(t, e, "web")
	d.Spec.Paused = true
	d.Spec.Template.Spec.Containers[0].Image = "img:2"
	_, err = e.Client.AppsV1().Deployments("default").Update(t.Context(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
	d = waitObserved(t, e, "web")
	assert.Len(t, ownedReplicaSets(t, e.Client, d), 1, "no rollout while paused")
	c := condition(d, appsv1.DeploymentProgressing)
	require.NotNil(t, c)
	assert.Equal(t, deployment.ReasonDeploymentPaused, c.Reason)
	assert.Equal(t, corev1.ConditionUnknown, c.Status)

	// Scaling still works while paused, on the old template.
	d.Spec.Replicas = ptr.To[int32](4)
	_, err = e.Client.AppsV1().Deployments("default").Update(t.Context(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitFor(t, "4 available replicas while paused", func(ctx context.Context) (bool, error) {
		d := getDeployment(t, e, "web")
		return d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == 4, nil
	})
	d = getDeployment(t, e, "web")
	rss := ownedReplicaSets(t, e.Client, d)
	require.Len(t, rss, 1)
	assert.EqualValues(t, 4, *rss[0].Spec.Replicas)
	assert.Equal(t, "img:1", rss[0].Spec.Template.Spec.Containers[0].Image)

	d.Spec.Paused = false
	_, err = e.Client.AppsV1().Deployments("default").Update(t.Context(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
	d = waitComplete(t, e.Client, "web")
	for _, p := range livePods(t, e.Client, "web") {
		assert.Equal(t, "img:2", p.Spec.Containers[0].Image)
	}
	assert.Equal(t, "2", d.Annotations[deployment.RevisionAnnotation])
}

// TestProportionalScaling is the example of the Kubernetes documentation:
// 10 replicas, maxSurge 3, maxUnavailable 2, a rollout to an image that
// never becomes ready stops at 8 old + 5 new; scaling to 15 then adds 3 to
// the old ReplicaSet and 2 to the new one.
func TestProportionalScaling(t *testing.T) {
	e := newEnv(t)
	e.kubelet.SetReady(func(p *corev1.Pod) bool { return p.Spec.Containers[0].Image != "img:bad" })
	_, err := e.Client.AppsV1().Deployments("default").Create(t.Context(),
		rolling(newDeployment("web", 10, "img:1"), intstr.FromInt32(3), intstr.FromInt32(2)), metav1.CreateOptions{})
	require.NoError(t, err)
	waitComplete(t, e.Client, "web")
	setImage(t, e.Client, "web", "img:bad")

	sizes := func() (old, cur int32) {
		d := getDeployment(t, e, "web")
		for _, rs := range ownedReplicaSets(t, e.Client, d) {
			if rs.Spec.Template.Spec.Containers[0].Image == "img:bad" {
				cur = *rs.Spec.Replicas
			} else {
				old = *rs.Spec.Replicas
			}
		}
		return old, cur
	}
	waitFor(t, "the rollout to stop at 8 old + 5 new", func(context.Context) (bool, error) {
		old, cur := sizes()
		return old == 8 && cur == 5, nil
	})
	waitFor(t, "the status of the stuck rollout", func(context.Context) (bool, error) {
		st := getDeployment(t, e, "web").Status
		return st.Replicas == 13 && st.AvailableReplicas == 8 && st.UpdatedReplicas == 5 && st.UnavailableReplicas == 5, nil
	})
	d := getDeployment(t, e, "web")
	avail := condition(d, appsv1.DeploymentAvailable)
	require.NotNil(t, avail)
	assert.Equal(t, corev1.ConditionTrue, avail.Status, "8 >= 10-2")

	d.Spec.Replicas = ptr.To[int32](15)
	_, err = e.Client.AppsV1().Deployments("default").Update(t.Context(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitFor(t, "proportional scaling to 11 old + 7 new", func(context.Context) (bool, error) {
		old, cur := sizes()
		return old == 11 && cur == 7, nil
	})
	// The stuck rollout resumes once the new pods become ready.
	e.kubelet.SetReady(nil)
	waitComplete(t, e.Client, "web")
}

func TestProgressDeadlineExceeded(t *testing.T) {
	e := newEnv(t)
	e.kubelet.SetReady(func(p *corev1.Pod) bool { return p.Spec.Containers[0].Image != "img:bad" })
	d := newDeployment("web", 2, "img:1")
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](1)
	_, err := e.Client.AppsV1().Deployments("default").Create(t.Context(), d, metav1.CreateOptions{})
	require.NoError(t, err)
	waitComplete(t, e.Client, "web")
	setImage(t, e.Client, "web", "img:bad")
	waitFor(t, "ProgressDeadlineExceeded", func(ctx context.Context) (bool, error) {
		c := condition(getDeployment(t, e, "web"), appsv1.DeploymentProgressing)
		return c != nil && c.Reason == deployment.ReasonProgressDeadlineExceeded, nil
	})
	d = getDeployment(t, e, "web")
	c := condition(d, appsv1.DeploymentProgressing)
	assert.Equal(t, corev1.ConditionFalse, c.Status)
	assert.Regexp(t, `^ReplicaSet "web-[a-z0-9]+" has timed out progressing\.$`, c.Message)
	avail := condition(d, appsv1.DeploymentAvailable)
	require.NotNil(t, avail)
	assert.Equal(t, corev1.ConditionTrue, avail.Status, "old pods keep the minimum available")
}

// TestRolloutUndo rolls back the way kubectl rollout undo does: a JSON
// patch of the template and annotations taken from the previous
// revision's ReplicaSet.
func TestRolloutUndo(t *testing.T) {
	e := newEnv(t)
	d := newDeployment("web", 2, "img:1")
	d.Annotations = map[string]string{deployment.ChangeCauseAnnotation: "create img:1"}
	_, err := e.Client.AppsV1().Deployments("default").Create(t.Context(), d, metav1.CreateOptions{})
	require.NoError(t, err)
	waitComplete(t, e.Client, "web")
	d = getDeployment(t, e, "web")
	d.Annotations[deployment.ChangeCauseAnnotation] = "update img:2"
	d.Spec.Template.Spec.Containers[0].Image = "img:2"
	_, err = e.Client.AppsV1().Deployments("default").Update(t.Context(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
	d = waitComplete(t, e.Client, "web")

	var rev1 *appsv1.ReplicaSet
	causes := map[string]string{}
	for _, rs := range ownedReplicaSets(t, e.Client, d) {
		causes[rs.Annotations[deployment.RevisionAnnotation]] = rs.Annotations[deployment.ChangeCauseAnnotation]
		if rs.Annotations[deployment.RevisionAnnotation] == "1" {
			rev1 = rs.DeepCopy()
		}
	}
	assert.Equal(t, map[string]string{"1": "create img:1", "2": "update img:2"}, causes, "rollout history")
	require.NotNil(t, rev1)

	tmpl := rev1.Spec.Template.DeepCopy()
	delete(tmpl.Labels, deployment.HashLabel)
	annotations := map[string]string{deployment.RevisionAnnotation: d.Annotations[deployment.RevisionAnnotation]}
	for k, v := range rev1.Annotations {
		switch k {
		case deployment.RevisionAnnotation, deployment.RevisionHistoryAnnotation, deployment.DesiredReplicasAnnotation, deployment.MaxReplicasAnnotation:
		default:
			annotations[k] = v
		}
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "replace", "path": "/spec/template", "value": tmpl},
		{"op": "replace", "path": "/metadata/annotations", "value": annotations},
	})
	require.NoError(t, err)
	_, err = e.Client.AppsV1().Deployments("default").Patch(t.Context(), "web", types.JSONPatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)

	d = waitComplete(t, e.Client, "web")
	for _, p := range livePods(t, e.Client, "web") {
		assert.Equal(t, "img:1", p.Spec.Containers[0].Image)
	}
	waitFor(t, "revision 3 on the old ReplicaSet", func(ctx context.Context) (bool, error) {
		d := getDeployment(t, e, "web")
		return d.Annotations[deployment.RevisionAnnotation] == "3", nil
	})
	rss := ownedReplicaSets(t, e.Client, d)
	require.Len(t, rss, 2, "the ReplicaSet of revision 1 is reused")
	for _, rs := range rss {
		if rs.Name == rev1.Name {
			assert.Equal(t, "3", rs.Annotations[deployment.RevisionAnnotation])
			assert.Equal(t, "1", rs.Annotations[deployment.RevisionHistoryAnnotation])
			assert.Equal(t, "create img:1", rs.Annotations[deployment.ChangeCauseAnnotation])
			assert.EqualValues(t, 2, *rs.Spec.Replicas)
		} else {
			assert.EqualValues(t, 0, *rs.Spec.Replicas)
		}
	}
}

// TestInServerRollback honours the rollback request annotation of the old
// rollback subresource.
func TestInServerRollback(t *testing.T) {
	e := newEnv(t)
	_, err := e.Client.AppsV1().Deployments("default").Create(t.Context(), newDeployment("web", 2, "img:1"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitComplete(t, e.Client, "web")
	setImage(t, e.Client, "web", "img:2")
	waitComplete(t, e.Client, "web")

	d := getDeployment(t, e, "web")
	d.Annotations[deployment.RollbackToAnnotation] = "0"
	_, err = e.Client.AppsV1().Deployments("default").Update(t.Context(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitFor(t, "the rollback to revision 1's template", func(ctx context.Context) (bool, error) {
		d := getDeployment(t, e, "web")
		_, pending := d.Annotations[deployment.RollbackToAnnotation]
		return !pending && d.Spec.Template.Spec.Containers[0].Image == "img:1", nil
	})
	d = waitComplete(t, e.Client, "web")
	_, hashed := d.Spec.Template.Labels[deployment.HashLabel]
	assert.False(t, hashed, "the hash label is not copied into the Deployment's template")
	waitFor(t, "revision 3", func(ctx context.Context) (bool, error) {
		return getDeployment(t, e, "web").Annotations[deployment.RevisionAnnotation] == "3", nil
	})
}

// TestAdoptOrphanReplicaSet: a Deployment adopts a matching ReplicaSet
// without a controller (e.g. left by --cascade=orphan) instead of making a
// second one for the same template.
func TestAdoptOrphanReplicaSet(t *testing.T) {
	e := newEnv(t)
	_, err := e.Client.AppsV1().Deployments("default").Create(t.Context(), newDeployment("web", 2, "img:1"), metav1.CreateOptions{})
	require.NoError(t, err)
	d := waitComplete(t, e.Client, "web")
	rss := ownedReplicaSets(t, e.Client, d)
	require.Len(t, rss, 1)
	orphan := metav1.DeletePropagationOrphan
	require.NoError(t, e.Client.AppsV1().Deployments("default").Delete(t.Context(), "web", metav1.DeleteOptions{PropagationPolicy: &orphan}))
	// No garbage collector runs here: do what it does for the orphan
	// finalizer — release the ReplicaSet, then drop the finalizer.
	rs, err := e.Client.AppsV1().ReplicaSets("default").Get(t.Context(), rss[0].Name, metav1.GetOptions{})
	require.NoError(t, err)
	rs.OwnerReferences = nil
	_, err = e.Client.AppsV1().ReplicaSets("default").Update(t.Context(), rs, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NotNil(t, getDeployment(t, e, "web").DeletionTimestamp)
	_, err = e.Client.AppsV1().Deployments("default").Patch(t.Context(), "web", types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	waitFor(t, "the deployment to go", func(ctx context.Context) (bool, error) {
		_, err := e.Client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	_, err = e.Client.AppsV1().Deployments("default").Create(t.Context(), newDeployment("web", 3, "img:1"), metav1.CreateOptions{})
	require.NoError(t, err)
	d = waitComplete(t, e.Client, "web")
	rss = ownedReplicaSets(t, e.Client, d)
	require.Len(t, rss, 1)
	assert.Equal(t, rs.Name, rss[0].Name, "the orphan was adopted")
	assert.EqualValues(t, 3, *rss[0].Spec.Replicas)
}
