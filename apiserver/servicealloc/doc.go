// Package servicealloc hands out the cluster IPs and node ports of
// Services: the allocation kube-apiserver does when a Service is written
// (step 4 of the birth sequence, "persist", for Services), which the proxy
// and the cluster DNS of step 16 then route and name.
//
// # Ranges
//
// IPRange allocates the addresses of the service CIDR (default
// 10.96.0.0/12, at most 2^20 addresses) except the network and IPv4
// broadcast addresses; PortRange the node ports (default 30000-32767). Both
// are bitmaps split in two bands, as Kubernetes does since KEP-3070 (IPs)
// and KEP-3668 (ports): the lower, static band (256 addresses of a /12: up
// to 10.96.1.0; 86 ports: 30000-30085) is where people pick values by
// hand, so dynamic allocation starts at a random point of the upper band
// and falls back to the lower one only when the upper one is full.
//
// The first address, 10.96.0.1, is the `kubernetes` service's, which the
// API server creates with that explicit IP. 10.96.0.10 is the cluster DNS
// service's by convention: Kubernetes does not reserve it, and neither does
// this package — the composition creates kube-dns with that explicit IP,
// and since it lies in the static band dynamic allocation never takes it
// before the 1,048,318 addresses above are gone.
//
// # State: records in the shared store (Config.Claims)
//
// API servers sharing a store (several on one etcd) must never hand out
// one value twice, so, as Kubernetes' MultiCIDRServiceAllocator does since
// 1.31, every allocated value has a record in the store and creating the
// record is the allocation: StoreClaims writes one networking.k8s.io/v1
// IPAddress per cluster IP (/registry/networking.k8s.io/ipaddresses/<ip>,
// parentRef naming the Service) and one RangeAllocation per node port
// (/registry/podkit.dev/servicenodeports/<port>; Kubernetes keeps node
// ports in one compare-and-swapped bitmap). The store's create-if-absent
// (an etcd transaction on the key's create revision) decides between
// concurrent API servers; AlreadyExists means taken.
//
//   - A requested value is claimed whatever this server believes: a taken
//     one fails with Kubernetes' "provided IP is already allocated"
//     (422), a store failure with a 500.
//   - A dynamic pick takes a value the in-memory ranges call free — they
//     are a cache of hints — and claims it; a record found there (another
//     API server was faster) marks it used and the next is tried. Ranges
//     that look full are rebuilt from the records once before "range is
//     full".
//   - A write reserves before the Service is stored (Allocate/Reallocate
//     return a Txn) and gives the values back when the write fails
//     (Txn.Revert); values the old version held and the new one drops
//     (ClusterIP → ExternalName, NodePort → ClusterIP) are released once
//     the write is stored (Txn.Commit); a deleted Service's after it is
//     gone (Release). Releasing deletes the record only while it is still
//     the Service's.
//   - Sync (before the first allocation) and Repair (every few minutes,
//     RunRepair) reconcile both directions, as Kubernetes' IPAddress repair
//     loop: a value a stored Service holds without a record gets one
//     (stores written before records existed); a record whose Service does
//     not hold its value — an API server died between the claim and the
//     Service write, or a release failed — is deleted once LeakThreshold
//     repairs in a row found that same record so (a create's record has no
//     stored Service until its write lands). Duplicates and values outside
//     the ranges are reported and logged.
//
// # State in memory only (no Claims)
//
// Without Claims the state lives in memory, derived from the stored
// Services — right for one API server per store, and what the package's
// own unit tests exercise: Sync loads every stored value, writes reserve
// and release in memory with the same Txn life cycle, and Repair allocates
// values stored Services hold and releases values without a stored owner
// after LeakThreshold runs (values changed while it lists are left for
// the next run). The API server always sets Claims.
//
// Dry runs reserve nothing: requested values are checked (range, taken)
// and dynamic ones only picked, so a dry-run response shows a plausible
// cluster IP rather than Kubernetes' placeholder network address.
package servicealloc
