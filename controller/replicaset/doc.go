// Package replicaset is the ReplicaSet controller: the second half of step
// 5 of the pod birth sequence. It turns a ReplicaSet (usually one a
// Deployment made for its current pod template) into the pods the
// scheduler then binds, and keeps their count right.
//
// One sync of a ReplicaSet, level-triggered from the informer caches:
//
//  1. Claim pods: its own (controller ownerReference with its UID) that
//     still match the selector, plus matching orphans it adopts; owned pods
//     that stopped matching are released (controller.RefManager).
//  2. If the cache has seen every pod it created or deleted last time
//     (controller.Expectations), create or delete the difference. Creation
//     runs in slow-start batches of 1, 2, 4, … so a failure (a quota, a
//     terminating namespace) stops after a few requests; deletion picks
//     victims with Kubernetes' preference (controller.RankPodsForDeletion:
//     unscheduled, pending and not-ready pods first, newest first).
//  3. Write the status: replicas, fullyLabeledReplicas, readyReplicas,
//     availableReplicas (ready for minReadySeconds), observedGeneration and
//     the ReplicaFailure condition while creating or deleting fails.
//
// Pods are named by the API server from generateName "<rs-name>-", so they
// get Kubernetes' "<rs-name>-<5 random chars>" names; events are
// SuccessfulCreate ("Created pod: web-5d7c9-abc12") and SuccessfulDelete.
//
// Design decision: the informers carry a controller-UID index
// (controller.ControllerUIDIndex), so a sync reads only its own pods and
// its namespace's orphans; Kubernetes' controller lists the whole
// namespace, which is quadratic with 10,000 replicas.
package replicaset
