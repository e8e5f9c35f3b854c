// Package controller is podkit's controller manager: step 5 of the pod
// birth sequence, where the objects a user wrote (a Deployment from
// `kubectl create deploy`) are turned into the objects the rest of the
// system acts on (ReplicaSets, then Pods the scheduler binds and kubelets
// run), and where cleanup (garbage collection, namespace deletion, node
// loss) is driven.
//
// The package holds the framework every controller uses; the controllers
// themselves live in subpackages (replicaset, deployment, gc, namespace,
// serviceaccount, nodelifecycle, job), each constructed from a Context by a
// NewFunc and run by a Manager:
//
//   - one shared informer factory (client-go) per Manager, so a pod is
//     watched once however many controllers look at pods;
//   - one rate-limited work queue per controller (NewQueue) of
//     namespace/name keys, drained by RunWorkers: controllers are
//     level-triggered — a sync reads the current state from the informer
//     caches and converges it, so any event, resync or restart leads to
//     the same result and the manager is safe to restart at any point;
//   - Expectations, because a cache lags behind the controller's own
//     writes: a ReplicaSet that just created 3 pods must not count its
//     cache's pods again until it has seen those 3;
//   - RefManager for ownership (adoption and release by selector) and
//     PodControl for pod writes with the events Kubernetes records.
//
// Design decisions: the Context is a plain struct of shared collaborators
// (client, informers, event recorders, clock, logger) rather than a
// service locator, so a controller's dependencies are visible and a test
// builds one in a few lines; per-controller settings are captured by the
// NewFunc closure instead of one giant configuration type; the clock is
// injectable for every time-based decision (minReadySeconds, progress
// deadlines, node grace periods) so tests need not sleep.
package controller
