// Package podkit re-implements the birth of a Kubernetes Pod, end to end, as
// a library of small swappable stages, and composes them into a working
// cluster that unmodified kubectl and client-go talk to.
//
// The birth sequence and the package that owns each step:
//
//  1. client POSTs the manifest                  apiserver (REST, discovery, OpenAPI, tables, watch)
//  2. authentication → authorization             apiserver/auth
//  3. mutating admission → validation → validating admission
//     apiserver/admission, apiserver/validation, apiserver/defaults
//  4. persist (Pending, nodeName ""), 201, watch apiserver/storage (memory, bbolt)
//  5. Deployment → ReplicaSet → Pods             controller
//  6. queue → filter → score → bind              scheduler
//  7. the kubelet sees the pod, a worker syncs it kubelet
//  8. QoS cgroups for pod and containers         cgroups
//  9. volumes, DNS files                         kubelet, cni
//  10. image resolve, auth, pull, store           image
//  11. layers unpacked, overlay prepared          overlay
//  12. sandbox namespaces (pinned, or pause)      sandbox
//  13. veth into the netns, IP, routes            cni
//  14. init containers, then app containers       sandbox
//  15. probes, restarts, status patched back      kubelet
//  16. endpoints, proxy rules, DNS                controller, proxy, dns
//  17. termination in reverse                     kubelet, sandbox, cni, overlay, cgroups
//
// Each stage is an importable package behind a small interface (Admitter,
// Validator, Store, Filter/Scorer, SandboxRunner, Networker, Snapshotter,
// ...), so a caller can replace one stage and keep the rest.
//
// This package is the reference composition. Node wires one node — the
// kubelet over the native runtime, a bridge network, a cgroup tree, the
// image store and overlay snapshots, node status and the kubelet's log
// server — with host-level names derived from the node's name so several
// nodes share a host. Cluster runs an API server, the controllers, the
// scheduler, an image registry and N nodes in one process; the components
// reach the API server in process (no TCP) while kubectl uses its port.
// Every stage can be replaced through the configuration hooks. The command
// cmd/podkit runs the components one by one or all together (podkit up).
package podkit
