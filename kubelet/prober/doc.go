// Package prober is step 15 of the birth sequence: once a container runs,
// the kubelet probes it — startup, then liveness and readiness — exactly as
// Kubernetes' kubelet does (pkg/kubelet/prober, pkg/probe), and reports what
// it found so the kubelet can restart the container or flip the pod's Ready
// condition.
//
// # Shape
//
// A [Manager] owns one goroutine (a worker) per configured probe of a pod's
// containers (app containers and restartable init containers, the
// sidecars). The kubelet:
//
//   - calls [Manager.AddPod] when it starts managing a pod (and again when
//     the pod is being deleted, so liveness and startup probes go quiet);
//   - calls [Manager.UpdateContainer] every time a container starts
//     (a new container ID resets that container's workers and probes it at
//     once) and with an empty container ID when it has exited;
//   - reads [Manager.Results]: an [Update] carries the event to record
//     (Unhealthy with Kubernetes' message, e.g. "Liveness probe failed: HTTP
//     probe failed with statuscode: 500") and, when Changed is set, a new
//     thresholded result to act on: a liveness or startup Failure means kill
//     and restart the container, a readiness change means regenerate the
//     pod's status;
//   - asks [Manager.Ready] and [Manager.Started] (cheap map lookups) when it
//     generates a pod status;
//   - calls [Manager.RemovePod] when the pod is gone, and [Manager.Close] on
//     shutdown.
//
// # Semantics (as the kubelet's worker)
//
// Each worker ticks every periodSeconds. Nothing is probed before
// initialDelaySeconds have passed since the container started; a worker
// wakes exactly when the delay ends rather than at the next tick. Until the
// startup probe has succeeded, liveness and readiness are not run; once it
// has, the startup probe stops and the readiness probe is run at once.
// A result must repeat successThreshold (success) or failureThreshold
// (failure) times in a row before the container's state changes. The
// initial state of a new container is Failure for readiness, Success for
// liveness and Unknown for startup. After a liveness or startup failure the
// worker holds until it sees a new container ID. A probe that errors (the
// named port does not exist, the exec runtime fails) throws its result away
// after three attempts and reports "<Kind> probe errored and resulted in
// unknown state: <error>". An HTTP redirect to another host is not followed:
// the probe succeeds with a ProbeWarning event, as in Kubernetes.
//
// When the manager started less than one period ago (a kubelet restart with
// many running pods), a worker's first probe is delayed by a random
// fraction of its period, so probes do not all fire at once.
//
// # Handlers
//
// exec goes through [Execer] (the sandbox runtime's ExecSync); httpGet uses
// a transport without keep-alives, proxies or compression that skips TLS
// verification, sends User-Agent "kube-probe/1.33" and Accept "*/*" unless
// the probe sets them, reads at most 10 KiB of the body, and dials with
// SO_LINGER 1s so probes leave no TIME_WAIT sockets behind; tcpSocket
// connects and closes; grpc calls grpc.health.v1.Health/Check over
// cleartext HTTP/2 (h2c) with the standard library — the protocol is two
// protobuf fields and a 5-byte frame, which did not justify adding
// google.golang.org/grpc to the module.
//
// All time goes through an injectable clock (k8s.io/utils/clock), so tests
// drive thresholds and delays with a fake clock.
package prober
