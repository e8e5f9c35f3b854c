package defaults

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func template() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
	}
}

func assertTemplateDefaulted(t *testing.T, tmpl corev1.PodTemplateSpec) {
	t.Helper()
	assert.Equal(t, corev1.RestartPolicyAlways, tmpl.Spec.RestartPolicy)
	assert.Equal(t, corev1.DNSClusterFirst, tmpl.Spec.DNSPolicy)
	assert.Equal(t, corev1.PullIfNotPresent, tmpl.Spec.Containers[0].ImagePullPolicy)
	assert.Nil(t, tmpl.Spec.EnableServiceLinks, "enableServiceLinks is a pod-only default")
}

func TestDeployment(t *testing.T) {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: template()}}
	Deployment(d)
	assert.Equal(t, int32(1), *d.Spec.Replicas)
	assert.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, d.Spec.Strategy.Type)
	assert.Equal(t, intstr.FromString("25%"), *d.Spec.Strategy.RollingUpdate.MaxSurge)
	assert.Equal(t, intstr.FromString("25%"), *d.Spec.Strategy.RollingUpdate.MaxUnavailable)
	assert.Equal(t, int32(10), *d.Spec.RevisionHistoryLimit)
	assert.Equal(t, int32(600), *d.Spec.ProgressDeadlineSeconds)
	assert.Nil(t, d.Spec.Selector, "apps/v1 requires the selector; it is not defaulted")
	assertTemplateDefaulted(t, d.Spec.Template)

	recreate := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{
		Replicas: ptrTo(int32(0)), Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
	}}
	Deployment(recreate)
	assert.Equal(t, int32(0), *recreate.Spec.Replicas)
	assert.Nil(t, recreate.Spec.Strategy.RollingUpdate)

	partial := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptrTo(intstr.FromInt32(2))},
	}}}
	Deployment(partial)
	assert.Equal(t, intstr.FromInt32(2), *partial.Spec.Strategy.RollingUpdate.MaxSurge)
	assert.Equal(t, intstr.FromString("25%"), *partial.Spec.Strategy.RollingUpdate.MaxUnavailable)
}

func TestReplicaSetDaemonSetStatefulSet(t *testing.T) {
	rs := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Template: template()}}
	ReplicaSet(rs)
	assert.Equal(t, int32(1), *rs.Spec.Replicas)
	assertTemplateDefaulted(t, rs.Spec.Template)

	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: template()}}
	DaemonSet(ds)
	assert.Equal(t, appsv1.RollingUpdateDaemonSetStrategyType, ds.Spec.UpdateStrategy.Type)
	assert.Equal(t, intstr.FromInt32(1), *ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable)
	assert.Equal(t, intstr.FromInt32(0), *ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge)
	assert.Equal(t, int32(10), *ds.Spec.RevisionHistoryLimit)
	assertTemplateDefaulted(t, ds.Spec.Template)

	ss := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
		Template:             template(),
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
	}}
	StatefulSet(ss)
	assert.Equal(t, appsv1.OrderedReadyPodManagement, ss.Spec.PodManagementPolicy)
	assert.Equal(t, appsv1.RollingUpdateStatefulSetStrategyType, ss.Spec.UpdateStrategy.Type)
	assert.Equal(t, int32(0), *ss.Spec.UpdateStrategy.RollingUpdate.Partition)
	assert.Equal(t, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, ss.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted)
	assert.Equal(t, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, ss.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled)
	assert.Equal(t, int32(1), *ss.Spec.Replicas)
	assert.Equal(t, int32(10), *ss.Spec.RevisionHistoryLimit)
	assert.Equal(t, corev1.ClaimPending, ss.Spec.VolumeClaimTemplates[0].Status.Phase)
	assert.Equal(t, corev1.PersistentVolumeFilesystem, *ss.Spec.VolumeClaimTemplates[0].Spec.VolumeMode)
	assertTemplateDefaulted(t, ss.Spec.Template)

	onDelete := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}}
	StatefulSet(onDelete)
	assert.Nil(t, onDelete.Spec.UpdateStrategy.RollingUpdate)
}

func TestJob(t *testing.T) {
	tests := []struct {
		name  string
		spec  batchv1.JobSpec
		check func(t *testing.T, j *batchv1.Job)
	}{
		{
			name: "non-parallel job",
			check: func(t *testing.T, j *batchv1.Job) {
				assert.Equal(t, int32(1), *j.Spec.Completions)
				assert.Equal(t, int32(1), *j.Spec.Parallelism)
				assert.Equal(t, int32(6), *j.Spec.BackoffLimit)
				assert.Equal(t, batchv1.NonIndexedCompletion, *j.Spec.CompletionMode)
				assert.False(t, *j.Spec.Suspend)
				assert.False(t, *j.Spec.ManualSelector)
				assert.Equal(t, batchv1.TerminatingOrFailed, *j.Spec.PodReplacementPolicy)
				assert.Equal(t, map[string]string{"app": "web"}, j.Labels)
				assertTemplateDefaulted(t, j.Spec.Template)
			},
		},
		{
			name: "work queue: parallelism only",
			spec: batchv1.JobSpec{Parallelism: ptrTo(int32(4))},
			check: func(t *testing.T, j *batchv1.Job) {
				assert.Nil(t, j.Spec.Completions)
				assert.Equal(t, int32(4), *j.Spec.Parallelism)
			},
		},
		{
			name: "completions only",
			spec: batchv1.JobSpec{Completions: ptrTo(int32(5))},
			check: func(t *testing.T, j *batchv1.Job) {
				assert.Equal(t, int32(5), *j.Spec.Completions)
				assert.Equal(t, int32(1), *j.Spec.Parallelism)
			},
		},
		{
			name: "backoff limit per index",
			spec: batchv1.JobSpec{BackoffLimitPerIndex: ptrTo(int32(2))},
			check: func(t *testing.T, j *batchv1.Job) {
				assert.Equal(t, int32(math.MaxInt32), *j.Spec.BackoffLimit)
			},
		},
		{
			name: "pod failure policy",
			spec: batchv1.JobSpec{PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
			}}}},
			check: func(t *testing.T, j *batchv1.Job) {
				assert.Equal(t, batchv1.Failed, *j.Spec.PodReplacementPolicy)
				assert.Equal(t, corev1.ConditionTrue, j.Spec.PodFailurePolicy.Rules[0].OnPodConditions[0].Status)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &batchv1.Job{Spec: tt.spec}
			j.Spec.Template = template()
			Job(j)
			tt.check(t, j)
		})
	}

	labelled := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"own": "x"}}, Spec: batchv1.JobSpec{Template: template()}}
	Job(labelled)
	assert.Equal(t, map[string]string{"own": "x"}, labelled.Labels)
}

func TestCronJob(t *testing.T) {
	c := &batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: "* * * * *"}}
	c.Spec.JobTemplate.Spec.Template = template()
	CronJob(c)
	assert.Equal(t, batchv1.AllowConcurrent, c.Spec.ConcurrencyPolicy)
	assert.False(t, *c.Spec.Suspend)
	assert.Equal(t, int32(3), *c.Spec.SuccessfulJobsHistoryLimit)
	assert.Equal(t, int32(1), *c.Spec.FailedJobsHistoryLimit)
	assertTemplateDefaulted(t, c.Spec.JobTemplate.Spec.Template)
	require.Nil(t, c.Spec.JobTemplate.Spec.BackoffLimit, "the job template's own fields are defaulted per Job")
}
