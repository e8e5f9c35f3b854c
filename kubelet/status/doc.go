// Package status computes a pod's status the way the kubelet's
// generateAPIPodStatus does (pkg/kubelet/kubelet_pods.go,
// pkg/kubelet/status), as pure functions: step 15 of the birth sequence,
// "status patched back".
//
// The kubelet gathers what it knows — the pod, the runtime's view of its
// sandbox and of every attempt of its containers, the prober's readiness
// and started flags, and the waiting reasons it decided itself
// (ErrImagePull, ImagePullBackOff, CrashLoopBackOff, ...) — into an [Input]
// and calls [Generate]. The result is a complete corev1.PodStatus: phase
// (Pending, Running, Succeeded, Failed, following restartPolicy and init
// containers), the conditions PodReadyToStartContainers, Initialized, Ready,
// ContainersReady and PodScheduled with Kubernetes' reasons and messages
// ("containers with unready status: [app]"), container and init container
// statuses (waiting/running/terminated, lastState, restartCount, ready,
// started, containerID "podkit://<id>", image, imageID), pod and host IPs
// and the QoS class.
//
// The status manager side is [Merge] and [NeedsUpdate]: Merge folds a newly
// generated status onto the last one written so that nothing regresses
// (a terminal phase is final, restart counts and start time never go back,
// IPs are not lost when the sandbox is gone, conditions keep their
// lastTransitionTime while their status holds, conditions owned by others
// are kept) and times are truncated to the seconds the API stores;
// NeedsUpdate tells whether a write would change anything the kubelet owns,
// so writes can be coalesced.
//
// Everything here is deterministic: no clock (Merge takes now), no I/O, no
// goroutines; the table tests pin the exact strings users see in kubectl.
package status
