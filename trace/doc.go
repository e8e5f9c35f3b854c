// Package trace is the birth trace of a Pod: the moment each step of the
// birth sequence completed — admitted and stored by the API server,
// scheduled and bound by the scheduler, then seen, cgroups, volumes,
// sandbox, network, each image, each init container, each container
// started, and ready on the node — kept with the pod in one annotation
// (Annotation) and observed as Prometheus histograms (Metrics). `podkit
// trace POD` draws it as a waterfall (WriteText, WriteSVG).
//
// # Who writes what
//
// Every component stamps its own steps with its own clock, and each write
// rides on a write the component makes anyway, so tracing adds no request
// to a pod's start:
//
//   - apiserver/admission.BirthTrace (opt-in, installed by the reference
//     composition) starts the trace on pod creation ("admitted", at the
//     end of mutating admission) and stamps "stored" just before the
//     storage write, then "bound" when a pods/binding is admitted.
//   - The scheduler stamps "scheduled" once its cycle chose a node; the
//     default binder sends the trace in the Binding's annotations, which
//     the API server copies onto the pod with the node name, as Kubernetes
//     copies Binding annotations.
//   - The kubelet keeps its steps in memory and writes the merged trace
//     once, after the pod first became Ready — off the critical path,
//     retried until it lands or the pod is gone. It writes through
//     pods/status, the one pod write a node may make (node authorizer,
//     NodeRestriction); the API server keeps the trace annotation of a
//     status write when it extends the stored trace, and only that
//     annotation (apiserver/birthtrace.go).
//
// Pods created without the admission plugin carry no annotation; the
// scheduler and the kubelet then add nothing to the pod (the kubelet still
// observes its steps in the metrics).
//
// # Format
//
// The annotation is compact JSON, one absolute start and integer
// microsecond offsets, so a trace of a dozen steps stays under a few
// hundred bytes and a step is appended without decoding (Append):
//
//	{"t0":"2025-01-02T03:04:05.123456789Z","s":[["admitted",0],["stored",412],["network",5012,"10.244.0.7"]]}
//
// A step is [name, µs since t0] or [name, µs, detail]. Names are the
// Step* constants; per-container steps are "<kind>:<container>" (image:web,
// init:setup, container:web). Offsets from another machine's clock may be
// negative; readers order steps by the birth sequence first (Rows), so a
// skewed clock shows as a zero-length step, never as a reordering.
//
// Design note: an annotation rather than Events because it is one object
// per pod that lives and dies with the pod, is readable with plain
// `kubectl get -o jsonpath`, and needs no list of events correlated by
// time; a separate key per component was rejected because a single value
// is what a Binding can carry through the API server's copy of its
// annotations.
package trace
