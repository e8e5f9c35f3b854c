// Package kubelet is steps 7–9 and 15–17 of the birth sequence: the node
// agent that watches pods bound to its node, drives each through a pod
// worker (cgroups, volumes, image, sandbox, network, init containers,
// containers, probes) and reports status back. It depends only on the stage
// interfaces of cgroups, image, overlay, sandbox and cni.
package kubelet
