// Package scheduler is step 6 of the birth sequence: it turns a Pending pod
// with an empty spec.nodeName into a bound pod.
//
// The scheduler watches, through client-go informers, the pods whose
// spec.schedulerName belongs to one of its profiles and the nodes. A pod
// waits in the scheduling queue (active heap ordered by priority then
// arrival, a backoff heap, and a set of unschedulable pods that only cluster
// events bring back), then goes through one scheduling cycle:
//
//	PreFilter → Filter (in parallel across nodes) → PreScore → Score →
//	Normalize → weight → pick the best node (random tie-break)
//
// The chosen node is assumed in the cache, so the next pods already see the
// capacity as used, and the pod is bound asynchronously through the
// pods/binding subresource. A failed bind forgets the assumption and
// requeues the pod. A pod that fits nowhere gets the PodScheduled=False
// condition with reason Unschedulable and a FailedScheduling event whose
// message has Kubernetes' format ("0/3 nodes are available: 1 Insufficient
// cpu, 2 node(s) had untolerated taint {...}.").
//
// Binding cycles run on reused binder goroutines (at most 64 binds in
// flight by default), and the Scheduled event of each pod is written by a
// small pool of event writers, so neither the bind nor the event traffic
// serialises on one goroutine at thousands of pods a second. The snapshot
// a cycle reads is refreshed incrementally (only nodes whose generation
// moved) and lays nodes out in memory in the order cycles walk them.
//
// Plugins implement only the extension points they need (Filter, Scorer and
// the optional PreFilter, PreScore, ScoreNormalizer, EnqueueExtensions); the
// in-tree plugins live in scheduler/plugins. A Profile groups plugins and
// weights under a schedulerName; profiles come from Go values or from a
// KubeSchedulerConfiguration-shaped YAML file (LoadConfigFile).
package scheduler
