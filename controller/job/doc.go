// Package job is the Job controller (batch/v1) of the controller manager:
// it runs a Job's pods to completion.
//
// A sync of one Job (level-triggered on the Job and its pods, one worker
// per Job at a time):
//
//   - claims the Job's pods: owned ones matching the selector, adopting
//     matching orphans (owner reference plus tracking finalizer) and
//     releasing owned ones that no longer match;
//   - counts finished pods with Kubernetes' finalizer tracking: every pod
//     is created with the batch.kubernetes.io/job-tracking finalizer, so it
//     cannot disappear before it is counted. A finished pod (Succeeded;
//     Failed, or deleted before it succeeded) is first recorded by UID in
//     status.uncountedTerminatedPods, then its finalizer is removed, then
//     it moves into status.succeeded or status.failed — each step written
//     before the next, so a crash at any point neither loses nor double
//     counts a pod. Neither cache may lag behind the controller's own
//     writes: pods whose finalizer removal is not observed yet are left
//     alone (finalizer expectations), and a Job whose cached status is
//     older than the controller's last status write is not synced until
//     the write arrives (statuswrites.go), since its counters would miss
//     the pods the write counted and new pods would replace completions
//     that already happened;
//   - fails the Job when status.failed exceeds spec.backoffLimit, or, with
//     restartPolicy OnFailure, when the containers' restarts reach it
//     (reason BackoffLimitExceeded, "Job has reached the specified backoff
//     limit"), or when activeDeadlineSeconds passed (DeadlineExceeded,
//     "Job was active longer than specified deadline");
//   - otherwise creates or deletes pods so that min(parallelism,
//     completions - succeeded) are active (parallelism alone without
//     completions, until one pod succeeds), creating in slow-start batches
//     and guarded by expectations so a lagging cache never over-creates;
//     after failures, new pods wait an exponential backoff (10 s doubling,
//     capped at 6 min; both injectable) counted from the last failure;
//   - completes it when completions pods succeeded (no completions: one
//     pod succeeded and none is active).
//
// Terminal conditions follow Kubernetes 1.31+: first the interim
// FailureTarget or SuccessCriteriaMet condition (reason CompletionsReached),
// active pods are deleted, and only when no pod is terminating any more
// the Failed or Complete condition is added (with status.completionTime).
// Status also carries active, ready, terminating, succeeded, failed and
// startTime. Pods are named "<job>-<random>" and carry the job-name,
// controller-uid and batch.kubernetes.io/job-name labels the API server
// put into the template.
//
// Indexed Jobs (completionMode Indexed) give each pod a completion index
// (annotation and label batch.kubernetes.io/job-completion-index, env
// JOB_COMPLETION_INDEX, hostname "<job>-<index>", name
// "<job>-<index>-<random>"), complete when every index in [0,
// completions) has a succeeded pod, and report status.completedIndexes.
// Suspended Jobs (spec.suspend) have their active pods deleted and the
// Suspended condition; resuming resets startTime.
//
// Scope: Jobs are driven by completions, parallelism, backoffLimit,
// activeDeadlineSeconds and suspend; podFailurePolicy, successPolicy and
// backoffLimitPerIndex do not change how this controller counts, and Jobs
// whose managedBy names another controller are left to it. The TTL-after-finished controller (NewTTLController) deletes
// finished Jobs after spec.ttlSecondsAfterFinished.
package job
