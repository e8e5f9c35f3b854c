// Package cni wires a pod's network namespace into the node's network and
// writes the pod's DNS files.
//
// In podkit's birth sequence the kubelet asks the sandbox for a pod's
// namespaces (step 12), then calls a Networker to put a veth pair into the
// network namespace, give it an address from the node's PodCIDR and route
// through the node (step 13); at termination it calls Teardown in reverse
// (step 17). Before the containers start it writes resolv.conf, hosts and
// hostname for them (step 9) with ResolvConf, HostsFile and Hostname.
//
// Two Networkers ship with podkit:
//
//   - Bridge (this package): a per-node Linux bridge, a veth pair per pod,
//     host-local style IPAM persisted under a state directory, optional IP
//     forwarding and nftables masquerading of pod egress, all done in
//     process with netlink — no plugin binaries, no exec.
//   - plugin.Networker (package cni/plugin): runs real CNI plugins from a
//     bin directory per the CNI specification, configured by network
//     configuration lists in a conf directory, through libcni.
//
// The contract mirrors CNI's: Setup is ADD, Teardown is DEL and is
// idempotent (it succeeds when nothing or only part is left, including when
// the namespace is gone), Check is CHECK. Package cni/cnitest holds the
// conformance suite every implementation runs; package cni/netns creates and
// enters pinned network namespaces.
package cni
