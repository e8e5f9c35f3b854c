// Package kubelet is steps 7–9 and 15–17 of the birth sequence: the node
// agent that watches the pods bound to its node, drives each through a pod
// worker (admission, cgroup, volumes, image, sandbox, init containers,
// containers, hooks, probes, restarts) and reports their status back; and
// in reverse, tears them down when they are deleted. It depends only on the
// stage interfaces of sandbox (SandboxRunner), image (Images), overlay
// (Snapshotter, Unpacker), cgroups (Cgroups), kubelet/volume (Volumes), and
// on the pure kubelet/status and kubelet/prober packages. Node registration,
// lease and node status are kubelet/nodestatus, plugged in as
// Config.NodeStatus; the log HTTP server (kubelet/server) reads LogFile.
//
// # Shape
//
// New(Config) builds a Kubelet; Run(ctx) runs it. Run lists the runtime first
// (so pods that already run are adopted, not restarted), then watches the
// node's pods through a client-go informer (spec.nodeName=<node>), the Node
// object, and the static pod directory. Each pod gets a worker goroutine
// that runs one sync at a time (pods are synced in parallel), woken by its
// sources, by the PLEG (runtime events through sandbox.EventSource, and a
// relist every RelistInterval: one List call), by probe results, and at the
// time its last sync asked for (back-off ends, activeDeadlineSeconds,
// ResyncInterval), from one timer over all workers' wake times. When ctx
// ends, the workers stop and the containers keep running.
//
// # A sync, in the seeds' order
//
//  1. Node admission, once: OS, resources against the Node's allocatable
//     minus the admitted pods' requests (an account kept as pods come and
//     go, not recounted per admission), the pod count (MaxPods), node
//     affinity and selector, node name, host ports, NoExecute taints — a
//     rejected pod is Failed with Kubernetes' reason (OutOfcpu, OutOfpods,
//     NodeAffinity, NodePorts, TaintToleration) and message
//     ("Pod was rejected: Node didn't have enough resource: cpu, requested:
//     2000, used: 0, capacity: 1000"). The scheduler's plugins do the
//     matching, as in Kubernetes.
//  2. activeDeadlineSeconds: past it, the pod fails with DeadlineExceeded.
//  3. Soft admission: a pod asking for an AppArmor profile the node cannot
//     enforce waits Pending (reason AppArmor, containers "Blocked").
//  4. The pod cgroup in its QoS tier, the pod and log directories.
//  5. Volumes (Volumes.Setup on every sync, which is how configMap and
//     secret updates propagate); each failed volume is a FailedMount event.
//  6. The sandbox, created when there is none, it is not ready, or its shape
//     (hostname, DNS, host namespaces, sysctls, runtime class) changed, in
//     which case the pod's containers are killed first (SandboxChanged).
//     The kubelet writes the pod's /etc/hosts once the sandbox has its IP and
//     passes resolv.conf and hostname to the runtime.
//  7. Init containers, one at a time, each to exit 0 before the next (a
//     failure under restartPolicy Never fails the pod); sidecars (restartable
//     init containers) must have started.
//  8. App containers: started when missing, restarted per restartPolicy
//     when exited, killed and restarted when a liveness or startup probe
//     failed or the spec's image changed. Starting one is the kubelet's
//     startContainer: CrashLoopBackOff check, image (pull policy, pull
//     secrets, ErrImagePull then ImagePullBackOff), environment (values,
//     downward API, configMap and secret keys, envFrom, $(VAR)), security
//     context, volume mounts plus /etc/hosts and the termination log,
//     rootfs snapshot over the unpacked image, create, start, postStart.
//  9. Garbage: per container at most one exited attempt besides the newest
//     (lastState and `logs --previous` need it), its snapshot with it.
//  10. Status: status.Generate and status.Merge, handed to the status
//     manager, which coalesces per pod and writes through pods/status.
//
// Restarts back off as Kubernetes does (client-go's flowcontrol.Backoff
// semantics without jitter): the first restart is immediate, then 10 s,
// 20 s, ... up to 5 min; a failure more than 10 min after the last restart
// starts over. Both the bases and the reset are configurable.
//
// # Cost per pod
//
// A node starts many pods at once, so a pod's first sync avoids work whose
// result it knows: the pod's directories are made with one mkdir each
// below their known parents, files it wrote into a directory it created
// are not read back or checked for, image references, image
// configurations (by image ID) and resolv.conf files (by namespace and DNS
// policy) are remembered, a generated status is shared (never modified)
// by the worker, its readers and the status manager, the runtime cache
// keeps one sorted view per pod until it changes, and a status echo from
// the informer is told apart from a spec change by the spec's encoding.
// What the kubelet writes to the API and to disk, and its events, are
// those of a kubelet that does all the work.
//
// # Termination
//
// Deleting a pod (deletionTimestamp) stops its containers gracefully in
// parallel: a Killing event, the preStop hook within the grace period
// (deletionGracePeriodSeconds, else terminationGracePeriodSeconds), the stop
// signal, SIGKILL when the rest of the grace period (at least 2 s) is over.
// Then the sandbox is stopped and removed, volumes torn down, snapshots and
// the cgroup removed, directories deleted, the final status written, and the
// API object deleted with grace period 0 and a UID precondition. A pod that
// vanished from the API (forced deletion), a removed static manifest and an
// orphan (a pod only the runtime knows) are torn down the same way without
// the status. A pod that finished without being deleted releases what runs
// and its volumes and cgroup but keeps its exited containers for its status
// and logs.
//
// # Restarts of the kubelet
//
// Sandboxes and containers carry the pod's identity in Kubernetes' labels
// (io.kubernetes.pod.uid, ...) and what is needed to stop them without
// their pod in annotations (grace period, preStop handler, snapshot key,
// termination log). A new Kubelet lists the runtime before it starts its
// workers, so it sees running containers, keeps them (same IDs, same
// restart counts), and tears down pods no source knows.
//
// # Static pods
//
// Manifests in StaticPodDir become pods named <name>-<node> with a UID
// hashed from the file and the node, and the annotations
// kubernetes.io/config.source=file and kubernetes.io/config.hash. Each gets
// a mirror pod in the API (kubernetes.io/config.mirror=<hash>, owned by the
// Node), re-created when deleted; its status goes to the mirror.
//
// # Differences from Kubernetes
//
//   - Service environment variables (enableServiceLinks) are not generated.
//   - Out of this kubelet's scope so far: ephemeral containers, in-place
//     resize, pod-level resources for sandboxes, device plugins, user
//     namespaces, and node-pressure eviction.
//   - Only NoExecute taints are checked at admission (as the kubelet does);
//     NoSchedule is the scheduler's.
//   - Sidecars are restarted but not ordered at termination.
//   - Back-offs have no jitter, so tests can assert them exactly.
//   - An image without a user counts as root for runAsNonRoot.
package kubelet
