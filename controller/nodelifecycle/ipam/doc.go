// Package ipam is the node IPAM controller of the controller manager
// (Kubernetes' range allocator): it gives every node a PodCIDR, a slice of
// the cluster CIDR, which the node's network plugin then hands out to its
// pods (cni.Bridge's PodCIDR). It is step 13's prerequisite in the pod
// birth sequence: a pod's IP comes from its node's PodCIDR.
//
// Persistence is the API: a node's subnets are written to
// node.spec.podCIDR and node.spec.podCIDRs (which the API server allows
// to go only from unset to set), and on start the allocation bitmap is
// rebuilt from the nodes that already have them, before any new
// allocation. One allocator owns the bitmap, guarded by a mutex, and one
// work-queue key per node means one allocation in flight per node, so
// nodes created concurrently never get overlapping subnets. A subnet
// allocated for a node whose patch has not been seen back yet is
// remembered and reused, so a stale cache never allocates twice; a patch
// the API rejects (the node got a CIDR some other way) releases it.
// Deleting a node releases its subnets; allocation is next-fit, so a
// released subnet is not reused at once. When the range is exhausted the
// node gets a CIDRNotAvailable event and waits for a release.
//
// Dual stack: give one cluster CIDR per IP family; every node gets one
// subnet from each, IPv4 (default mask /24) and IPv6 (default /64).
package ipam
