// Package deployment is the Deployment controller: the first half of step
// 5 of the pod birth sequence ("kubectl create deploy web --replicas=3"
// becomes a ReplicaSet web-<hash>, which the replicaset package turns into
// pods).
//
// A Deployment owns one ReplicaSet per pod template it has had. The
// ReplicaSet of the current template (the "new" one) is named
// <deployment>-<pod-template-hash>, where the hash is Kubernetes'
// (ComputeHash: FNV-32a of the template's spew dump plus collisionCount,
// safe-encoded), and carries the hash in its selector, labels and pod
// labels so templates never share pods. Annotations record the revision
// (deployment.kubernetes.io/revision, also on the Deployment), earlier
// revisions after a rollback (revision-history), and the desired and max
// replicas the ReplicaSet was last sized for (the base of proportional
// scaling); the Deployment's own annotations such as
// kubernetes.io/change-cause are copied to the new ReplicaSet, which is
// what `kubectl rollout history` lists and `kubectl rollout undo` copies
// back.
//
// One sync, level-triggered like every podkit controller:
//
//   - claim ReplicaSets by selector (adopt orphans, release strays);
//   - paused, or spec.replicas changed (a "scaling event"): resize only,
//     proportionally across ReplicaSets mid-rollout (ProportionalSizes);
//   - RollingUpdate: grow the new ReplicaSet while all ReplicaSets stay
//     within spec.replicas+maxSurge, shrink old ones (unavailable replicas
//     first) while available replicas stay at least
//     spec.replicas-maxUnavailable (ResolveFenceposts: surge rounds up,
//     unavailable down, both zero means one unavailable);
//   - Recreate: old ReplicaSets to zero, wait until their pods are gone,
//     then the new one at full size;
//   - delete old ReplicaSets beyond revisionHistoryLimit once complete;
//   - status (replicas, updatedReplicas, readyReplicas, availableReplicas,
//     unavailableReplicas, observedGeneration, collisionCount) and the
//     conditions `kubectl rollout status` reads: Available
//     (MinimumReplicasAvailable/Unavailable) and Progressing
//     (NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated,
//     NewReplicaSetAvailable, ProgressDeadlineExceeded, paused/resumed).
//
// Differences from Kubernetes, and why: a rolling scale-down counts a
// ReplicaSet's available replicas at most at its spec.replicas, so a
// stale status right after a scale-down can never let availability dip
// below the minimum; the Deployment's revision annotation is written with a
// metadata patch because podkit's status subresource, unlike Kubernetes'
// Deployment status strategy, keeps only the status.
package deployment
