package printers

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
)

// deploymentCells computes NAME, READY ("ready/desired"), UP-TO-DATE,
// AVAILABLE, AGE, CONTAINERS, IMAGES, SELECTOR of a deployment.
func deploymentCells(c *cellContext, d *appsv1.Deployment) []any {
	selector := "<invalid>"
	if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
		selector = s.String()
	}
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	return []any{
		d.Name,
		fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, int32Value(d.Spec.Replicas)),
		int64(d.Status.UpdatedReplicas),
		int64(d.Status.AvailableReplicas),
		c.since(d.CreationTimestamp),
		names, images, selector,
	}
}

// replicaSetCells computes NAME, DESIRED, CURRENT, READY, AGE, CONTAINERS,
// IMAGES, SELECTOR of a replica set.
func replicaSetCells(c *cellContext, rs *appsv1.ReplicaSet) []any {
	names, images := containerCells(rs.Spec.Template.Spec.Containers)
	return []any{
		rs.Name,
		int64(int32Value(rs.Spec.Replicas)),
		int64(rs.Status.Replicas),
		int64(rs.Status.ReadyReplicas),
		c.since(rs.CreationTimestamp),
		names, images, metav1.FormatLabelSelector(rs.Spec.Selector),
	}
}

// replicationControllerCells computes NAME, DESIRED, CURRENT, READY, AGE,
// CONTAINERS, IMAGES, SELECTOR of a replication controller.
func replicationControllerCells(c *cellContext, rc *corev1.ReplicationController) []any {
	var containers []corev1.Container
	if rc.Spec.Template != nil {
		containers = rc.Spec.Template.Spec.Containers
	}
	names, images := containerCells(containers)
	return []any{
		rc.Name,
		int64(int32Value(rc.Spec.Replicas)),
		int64(rc.Status.Replicas),
		int64(rc.Status.ReadyReplicas),
		c.since(rc.CreationTimestamp),
		names, images, labels.FormatLabels(rc.Spec.Selector),
	}
}

// statefulSetCells computes NAME, READY, AGE, CONTAINERS, IMAGES.
func statefulSetCells(c *cellContext, s *appsv1.StatefulSet) []any {
	names, images := containerCells(s.Spec.Template.Spec.Containers)
	return []any{
		s.Name,
		fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, int32Value(s.Spec.Replicas)),
		c.since(s.CreationTimestamp),
		names, images,
	}
}

// daemonSetCells computes NAME, DESIRED, CURRENT, READY, UP-TO-DATE,
// AVAILABLE, NODE SELECTOR, AGE, CONTAINERS, IMAGES, SELECTOR.
func daemonSetCells(c *cellContext, ds *appsv1.DaemonSet) []any {
	names, images := containerCells(ds.Spec.Template.Spec.Containers)
	return []any{
		ds.Name,
		int64(ds.Status.DesiredNumberScheduled),
		int64(ds.Status.CurrentNumberScheduled),
		int64(ds.Status.NumberReady),
		int64(ds.Status.UpdatedNumberScheduled),
		int64(ds.Status.NumberAvailable),
		labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
		c.since(ds.CreationTimestamp),
		names, images, metav1.FormatLabelSelector(ds.Spec.Selector),
	}
}

// jobCells computes NAME, STATUS, COMPLETIONS, DURATION, AGE, CONTAINERS,
// IMAGES, SELECTOR of a job.
func jobCells(c *cellContext, j *batchv1.Job) []any {
	var completions string
	switch {
	case j.Spec.Completions != nil:
		completions = fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	case int32Value(j.Spec.Parallelism) > 1:
		completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *j.Spec.Parallelism)
	default:
		completions = fmt.Sprintf("%d/1", j.Status.Succeeded)
	}

	var jobDuration string
	switch {
	case j.Status.StartTime == nil:
	case j.Status.CompletionTime == nil:
		jobDuration = duration.HumanDuration(c.now.Sub(j.Status.StartTime.Time))
	default:
		jobDuration = duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
	}

	names, images := containerCells(j.Spec.Template.Spec.Containers)
	return []any{
		j.Name, jobStatus(j), completions, jobDuration, c.since(j.CreationTimestamp),
		names, images, metav1.FormatLabelSelector(j.Spec.Selector),
	}
}

// jobStatus is the STATUS cell of a job, by Kubernetes' precedence.
func jobStatus(j *batchv1.Job) string {
	switch {
	case jobCondition(j, batchv1.JobComplete):
		return "Complete"
	case jobCondition(j, batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case jobCondition(j, batchv1.JobSuspended):
		return "Suspended"
	case jobCondition(j, batchv1.JobFailureTarget):
		return "FailureTarget"
	case jobCondition(j, batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

// jobCondition reports whether the first condition of type t is True.
func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, cond := range j.Status.Conditions {
		if cond.Type == t {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// cronJobCells computes NAME, SCHEDULE, TIMEZONE, SUSPEND, ACTIVE,
// LAST SCHEDULE, AGE, CONTAINERS, IMAGES, SELECTOR of a cron job.
func cronJobCells(c *cellContext, cj *batchv1.CronJob) []any {
	lastSchedule := none
	if cj.Status.LastScheduleTime != nil {
		lastSchedule = c.since(*cj.Status.LastScheduleTime)
	}
	timeZone := none
	if cj.Spec.TimeZone != nil {
		timeZone = *cj.Spec.TimeZone
	}
	tmpl := cj.Spec.JobTemplate.Spec
	names, images := containerCells(tmpl.Template.Spec.Containers)
	return []any{
		cj.Name, cj.Spec.Schedule, timeZone, boolPtrCell(cj.Spec.Suspend),
		int64(len(cj.Status.Active)), lastSchedule, c.since(cj.CreationTimestamp),
		names, images, metav1.FormatLabelSelector(tmpl.Selector),
	}
}
