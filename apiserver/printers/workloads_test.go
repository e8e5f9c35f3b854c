package printers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func template() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "nginx:1.27"},
			{Name: "log", Image: "busybox"},
		}},
	}
}

var webSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}

func TestDeploymentCells(t *testing.T) {
	p := newTestPrinter(t)
	d := &appsv1.Deployment{
		ObjectMeta: objMeta("web", 26*time.Hour),
		Spec:       appsv1.DeploymentSpec{Replicas: ptr(int32(3)), Selector: webSelector, Template: template()},
		Status:     appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2},
	}
	assert.Equal(t, []any{"web", "2/3", int64(3), int64(2), "26h", "app,log", "nginx:1.27,busybox", "app=web"}, cellsOf(t, p, d))

	d.Spec.Replicas = nil
	d.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	cells := cellsOf(t, p, d)
	assert.Equal(t, "2/0", cells[1])
	assert.Equal(t, "<invalid>", cells[7])
	assert.Equal(t, []string{"Name", "Ready", "Up-to-date", "Available", "Age", "+Containers", "+Images", "+Selector"}, columnNames(p.ColumnDefinitions(d)))
}

func TestReplicaSetAndControllerCells(t *testing.T) {
	p := newTestPrinter(t)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: objMeta("web-5d8f", 90*time.Minute),
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr(int32(3)), Selector: webSelector, Template: template()},
		Status:     appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 1},
	}
	assert.Equal(t, []any{"web-5d8f", int64(3), int64(3), int64(1), "90m", "app,log", "nginx:1.27,busybox", "app=web"}, cellsOf(t, p, rs))
	rs.Spec.Selector = nil
	assert.Equal(t, "<none>", cellsOf(t, p, rs)[7])
	assert.Equal(t, []string{"Name", "Desired", "Current", "Ready", "Age", "+Containers", "+Images", "+Selector"}, columnNames(p.ColumnDefinitions(rs)))

	tmpl := template()
	rc := &corev1.ReplicationController{
		ObjectMeta: objMeta("legacy", time.Minute),
		Spec:       corev1.ReplicationControllerSpec{Replicas: ptr(int32(2)), Selector: map[string]string{"app": "web"}, Template: &tmpl},
		Status:     corev1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 2},
	}
	assert.Equal(t, []any{"legacy", int64(2), int64(2), int64(2), "60s", "app,log", "nginx:1.27,busybox", "app=web"}, cellsOf(t, p, rc))
	rc.Spec.Template = nil
	assert.Equal(t, []any{"", ""}, cellsOf(t, p, rc)[5:7])
}

func TestStatefulSetAndDaemonSetCells(t *testing.T) {
	p := newTestPrinter(t)
	ss := &appsv1.StatefulSet{
		ObjectMeta: objMeta("db", 8*24*time.Hour),
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr(int32(3)), Template: template()},
		Status:     appsv1.StatefulSetStatus{ReadyReplicas: 3},
	}
	assert.Equal(t, []any{"db", "3/3", "8d", "app,log", "nginx:1.27,busybox"}, cellsOf(t, p, ss))

	ds := &appsv1.DaemonSet{
		ObjectMeta: objMeta("proxy", 50*time.Hour),
		Spec:       appsv1.DaemonSetSpec{Selector: webSelector, Template: template()},
		Status:     appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, UpdatedNumberScheduled: 3, NumberAvailable: 2},
	}
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	assert.Equal(t, []any{"proxy", int64(3), int64(3), int64(2), int64(3), int64(2), "kubernetes.io/os=linux", "2d2h", "app,log", "nginx:1.27,busybox", "app=web"}, cellsOf(t, p, ds))
}

func TestJobCells(t *testing.T) {
	cond := func(t batchv1.JobConditionType, s corev1.ConditionStatus) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: s}
	}
	tests := []struct {
		name                     string
		job                      batchv1.Job
		status, completions, dur string
	}{
		{"not started", batchv1.Job{Spec: batchv1.JobSpec{Completions: ptr(int32(1))}}, "Running", "0/1", ""},
		{"running", batchv1.Job{Spec: batchv1.JobSpec{Completions: ptr(int32(5))}, Status: batchv1.JobStatus{Succeeded: 2, StartTime: agoPtr(3 * time.Minute)}}, "Running", "2/5", "3m"},
		{"complete", batchv1.Job{Spec: batchv1.JobSpec{Completions: ptr(int32(1))}, Status: batchv1.JobStatus{
			Succeeded: 1, StartTime: agoPtr(time.Hour), CompletionTime: agoPtr(time.Hour - 45*time.Second),
			Conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue), cond(batchv1.JobComplete, corev1.ConditionTrue)},
		}}, "Complete", "1/1", "45s"},
		{"failed", batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue), cond(batchv1.JobFailed, corev1.ConditionTrue)}}}, "Failed", "0/1", ""},
		{"suspended", batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobSuspended, corev1.ConditionTrue)}}}, "Suspended", "0/1", ""},
		{"resumed", batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobSuspended, corev1.ConditionFalse)}}}, "Running", "0/1", ""},
		{"failure target", batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue)}}}, "FailureTarget", "0/1", ""},
		{"success criteria met", batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue)}}}, "SuccessCriteriaMet", "0/1", ""},
		{"terminating", batchv1.Job{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: agoPtr(time.Second)}, Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobSuspended, corev1.ConditionTrue)}}}, "Terminating", "0/1", ""},
		{"work queue", batchv1.Job{Spec: batchv1.JobSpec{Parallelism: ptr(int32(4))}, Status: batchv1.JobStatus{Succeeded: 1}}, "Running", "1/1 of 4", ""},
		{"parallelism one", batchv1.Job{Spec: batchv1.JobSpec{Parallelism: ptr(int32(1))}}, "Running", "0/1", ""},
	}
	p := newTestPrinter(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := tt.job
			deleted := j.DeletionTimestamp
			j.ObjectMeta = objMeta("pi", 4*time.Hour)
			j.DeletionTimestamp = deleted
			j.Spec.Selector = webSelector
			j.Spec.Template = template()
			assert.Equal(t, []any{"pi", tt.status, tt.completions, tt.dur, "4h", "app,log", "nginx:1.27,busybox", "app=web"}, cellsOf(t, p, &j))
		})
	}
	assert.Equal(t, []string{"Name", "Status", "Completions", "Duration", "Age", "+Containers", "+Images", "+Selector"}, columnNames(p.ColumnDefinitions(&batchv1.Job{})))
}

func TestCronJobCells(t *testing.T) {
	p := newTestPrinter(t)
	cj := &batchv1.CronJob{ObjectMeta: objMeta("nightly", 24*time.Hour), Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *"}}
	cj.Spec.JobTemplate.Spec.Template = template()
	assert.Equal(t, []any{"nightly", "0 3 * * *", "<none>", "<unset>", int64(0), "<none>", "24h", "app,log", "nginx:1.27,busybox", "<none>"}, cellsOf(t, p, cj))

	cj.Spec.TimeZone = ptr("Europe/Paris")
	cj.Spec.Suspend = ptr(false)
	cj.Status.Active = []corev1.ObjectReference{{Name: "nightly-1"}}
	cj.Status.LastScheduleTime = agoPtr(9 * time.Hour)
	assert.Equal(t, []any{"Europe/Paris", "False", int64(1), "9h"}, cellsOf(t, p, cj)[2:6])
	cj.Spec.Suspend = ptr(true)
	assert.Equal(t, "True", cellsOf(t, p, cj)[3])
}
