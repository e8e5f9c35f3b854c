package validation

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func template(labels map[string]string, restart corev1.RestartPolicy) corev1.PodTemplateSpec {
	spec := validPodSpec()
	spec.RestartPolicy = restart
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}
}

func validDeployment() *appsv1.Deployment {
	quarter := intstr.FromString("25%")
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: template(map[string]string{"app": "web", "tier": "front"}, corev1.RestartPolicyAlways),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &quarter, MaxSurge: &quarter}},
			RevisionHistoryLimit:    ptr(int32(10)),
			ProgressDeadlineSeconds: ptr(int32(600)),
		},
	}
}

func TestDeployment(t *testing.T) {
	zero := intstr.FromInt32(0)
	cases := []struct {
		name string
		mut  func(d *appsv1.Deployment)
		want []want
	}{
		{"valid", func(*appsv1.Deployment) {}, nil},
		{"selector required", func(d *appsv1.Deployment) { d.Spec.Selector = nil }, []want{req("spec.selector")}},
		{"selector empty", func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }, []want{inv("spec.selector", "empty selector is invalid for deployment")}},
		{"selector mismatch", func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "db"} },
			[]want{inv("spec.template.metadata.labels", "`selector` does not match template `labels`")}},
		{"negative replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(-1)) }, []want{inv("spec.replicas", "greater than or equal to 0")}},
		{"restartPolicy must be Always", func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			[]want{notSup("spec.template.spec.restartPolicy")}},
		{"template container checked", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Name = "" },
			[]want{req("spec.template.spec.containers[0].name")}},
		{"template image whitespace tolerated", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = " " }, nil},
		{"activeDeadlineSeconds forbidden", func(d *appsv1.Deployment) { d.Spec.Template.Spec.ActiveDeadlineSeconds = ptr(int64(5)) },
			[]want{forb("spec.template.spec.activeDeadlineSeconds", "activeDeadlineSeconds in ReplicaSet is not Supported")}},
		{"strategy both zero", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: &zero, MaxSurge: &zero}
		},
			[]want{inv("spec.strategy.rollingUpdate.maxUnavailable", "may not be 0 when `maxSurge` is 0")}},
		{"maxUnavailable over 100%", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr(intstr.FromString("150%"))
		},
			[]want{inv("spec.strategy.rollingUpdate.maxUnavailable", "must not be greater than 100%")}},
		{"bad percent", func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = ptr(intstr.FromString("lots")) },
			[]want{inv("spec.strategy.rollingUpdate.maxSurge", "")}},
		{"recreate with rollingUpdate", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType },
			[]want{forb("spec.strategy.rollingUpdate", "'Recreate'")}},
		{"unknown strategy", func(d *appsv1.Deployment) { d.Spec.Strategy = appsv1.DeploymentStrategy{Type: "BlueGreen"} }, []want{notSup("spec.strategy")}},
		{"revisionHistoryLimit negative", func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = ptr(int32(-1)) }, []want{inv("spec.revisionHistoryLimit", "")}},
		{"progress deadline not above minReady", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 },
			[]want{inv("spec.progressDeadlineSeconds", "must be greater than minReadySeconds")}},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := validDeployment()
			tc.mut(d)
			expectErrors(t, v.ValidateCreate(d), tc.want...)
		})
	}
}

func TestDeploymentUpdateAndStatus(t *testing.T) {
	v := Default()
	old := validDeployment()
	old.ObjectMeta = storedMeta(old.ObjectMeta)
	d := old.DeepCopy()
	d.Spec.Replicas = ptr(int32(5))
	d.Spec.Template.Spec.Containers[0].Image = "registry.local/app:2"
	expectErrors(t, v.ValidateUpdate(d, old))
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "front"}}
	expectErrors(t, v.ValidateUpdate(d, old), inv("spec.selector", "field is immutable"))

	st := old.DeepCopy()
	st.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 3, AvailableReplicas: 1, CollisionCount: ptr(int32(1))}
	old.Status.CollisionCount = ptr(int32(2))
	expectErrors(t, v.ValidateStatusUpdate(st, old), inv("status.readyReplicas", "cannot be greater than status.replicas"),
		inv("status.collisionCount", "cannot be decremented"))
}

func TestReplicaSet(t *testing.T) {
	v := Default()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "default"}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: template(map[string]string{"app": "web"}, corev1.RestartPolicyAlways)}}
	expectErrors(t, v.ValidateCreate(rs))
	bad := rs.DeepCopy()
	bad.Spec.Template.Labels = nil
	bad.Spec.Replicas = ptr(int32(-2))
	expectErrors(t, v.ValidateCreate(bad), inv("spec.template.metadata.labels", "does not match"), inv("spec.replicas", ""))
	old := rs.DeepCopy()
	old.ObjectMeta = storedMeta(old.ObjectMeta)
	upd := old.DeepCopy()
	upd.Spec.Selector.MatchLabels["x"] = "y"
	upd.Spec.Template.Labels["x"] = "y"
	expectErrors(t, v.ValidateUpdate(upd, old), inv("spec.selector", "field is immutable"))
	st := old.DeepCopy()
	st.Status = appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 2}
	expectErrors(t, v.ValidateStatusUpdate(st, old), inv("status.fullyLabeledReplicas", "cannot be greater than status.replicas"))
}

func validJob() *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: "default"}, Spec: batchv1.JobSpec{
		Parallelism: ptr(int32(1)), Completions: ptr(int32(1)), BackoffLimit: ptr(int32(6)),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/job-name": "batch"}},
		Template: template(map[string]string{"batch.kubernetes.io/job-name": "batch"}, corev1.RestartPolicyNever)}}
}

func TestJob(t *testing.T) {
	cases := []struct {
		name string
		mut  func(j *batchv1.Job)
		want []want
	}{
		{"valid", func(*batchv1.Job) {}, nil},
		{"selector generated later", func(j *batchv1.Job) { j.Spec.Selector = nil }, nil},
		{"manual selector required", func(j *batchv1.Job) { j.Spec.Selector, j.Spec.ManualSelector = nil, ptr(true) }, []want{req("spec.selector")}},
		{"selector mismatch", func(j *batchv1.Job) { j.Spec.Template.Labels = nil }, []want{inv("spec.template.metadata.labels", "does not match")}},
		{"restartPolicy Always", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			[]want{notSup("spec.template.spec.restartPolicy")}},
		{"OnFailure ok", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure }, nil},
		{"negative counts", func(j *batchv1.Job) {
			j.Spec.Parallelism, j.Spec.Completions, j.Spec.BackoffLimit = ptr(int32(-1)), ptr(int32(-1)), ptr(int32(-1))
		}, []want{inv("spec.parallelism", ""), inv("spec.completions", ""), inv("spec.backoffLimit", "")}},
		{"indexed needs completions", func(j *batchv1.Job) { j.Spec.CompletionMode, j.Spec.Completions = ptr(batchv1.IndexedCompletion), nil },
			[]want{req("spec.completions")}},
		{"completion mode", func(j *batchv1.Job) { j.Spec.CompletionMode = ptr(batchv1.CompletionMode("Random")) }, []want{notSup("spec.completionMode")}},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := validJob()
			tc.mut(j)
			expectErrors(t, v.ValidateCreate(j), tc.want...)
		})
	}
}

func TestJobUpdate(t *testing.T) {
	v := Default()
	old := validJob()
	old.ObjectMeta = storedMeta(old.ObjectMeta)
	j := old.DeepCopy()
	j.Spec.Parallelism = ptr(int32(3))
	j.Spec.Suspend = ptr(true)
	expectErrors(t, v.ValidateUpdate(j, old))
	j.Spec.Template.Spec.Containers[0].Image = "other"
	expectErrors(t, v.ValidateUpdate(j, old), inv("spec.template", "field is immutable"))
	j = old.DeepCopy()
	j.Spec.Completions = ptr(int32(4))
	expectErrors(t, v.ValidateUpdate(j, old), inv("spec.completions", "field is immutable"))

	// A suspended job that never started may change scheduling directives.
	old.Spec.Suspend = ptr(true)
	j = old.DeepCopy()
	j.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "batch"}
	expectErrors(t, v.ValidateUpdate(j, old))

	st := old.DeepCopy()
	st.Status.Active = -1
	expectErrors(t, v.ValidateStatusUpdate(st, old), inv("status.active", ""))
}

func TestStatefulSetAndDaemonSet(t *testing.T) {
	v := Default()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr(int32(3)), Selector: sel, Template: template(map[string]string{"app": "db"}, corev1.RestartPolicyAlways), ServiceName: "db",
		PodManagementPolicy: appsv1.OrderedReadyPodManagement, UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}}}
	expectErrors(t, v.ValidateCreate(ss))
	old := ss.DeepCopy()
	old.ObjectMeta = storedMeta(old.ObjectMeta)
	upd := old.DeepCopy()
	upd.Spec.ServiceName = "other"
	expectErrors(t, v.ValidateUpdate(upd, old), forb("spec", "updates to statefulset spec for fields other than"))
	dotted := ss.DeepCopy()
	dotted.Name = "db.v1"
	expectErrors(t, v.ValidateCreate(dotted), inv("metadata.name", "must not contain dots"))

	one := intstr.FromInt32(1)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system"}, Spec: appsv1.DaemonSetSpec{
		Selector: sel, Template: template(map[string]string{"app": "db"}, corev1.RestartPolicyAlways),
		UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one, MaxSurge: ptr(intstr.FromInt32(0))}}}}
	expectErrors(t, v.ValidateCreate(ds))
	ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = &one
	expectErrors(t, v.ValidateCreate(ds), inv("spec.updateStrategy.rollingUpdate.maxSurge", "may not be set when maxUnavailable is non-zero"))
}

func TestReplicationControllerAndPodTemplate(t *testing.T) {
	v := Default()
	tmpl := template(map[string]string{"app": "web"}, corev1.RestartPolicyAlways)
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ReplicationControllerSpec{Replicas: ptr(int32(1)), Selector: map[string]string{"app": "web"}, Template: &tmpl}}
	expectErrors(t, v.ValidateCreate(rc))
	rc.Spec.Selector, rc.Spec.Template = nil, nil
	expectErrors(t, v.ValidateCreate(rc), req("spec.selector"), req("spec.template"))

	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tmpl", Namespace: "default"}, Template: tmpl}
	expectErrors(t, v.ValidateCreate(pt))
	pt.Template.Spec.Containers = nil
	expectErrors(t, v.ValidateCreate(pt), req("template.spec.containers"))
}
