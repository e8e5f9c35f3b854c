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
// # State: derived from the stored Services
//
// Allocator keeps the state in memory and treats the stored Services as
// the truth, instead of persisting a bitmap next to them (Kubernetes kept
// a RangeAllocation snapshot in etcd before 1.31, and now writes one
// IPAddress object per address). The Services already record every cluster
// IP and node port, podkit's stores are written by one API server, and a
// derived state cannot drift from what it derives from:
//
//   - Sync lists the Services before the first allocation (allocations wait
//     for it), so a restarted API server knows every stored value.
//   - A write reserves in memory, atomically, before the Service is stored
//     (Allocate/Reallocate return a Txn) and gives the values back when the
//     write fails (Txn.Revert); values the old version held and the new one
//     drops (ClusterIP → ExternalName, NodePort → ClusterIP) are released
//     only once the write is stored (Txn.Commit). A deleted Service's
//     values are released after it is gone (Release).
//   - Repair, run every few minutes (RunRepair), plays the role of
//     Kubernetes' repair controllers: values held by stored Services but
//     not allocated (written by another API server, or behind an
//     ambiguous storage error) become allocated, and values allocated with
//     no stored owner are released once LeakThreshold repairs in a row
//     found them so — a create's reservation is owner-less until its
//     Service is stored. Values changed while Repair lists are left for
//     the next run, so Repair never races a write. Duplicates and values
//     outside the ranges (the ranges changed) are reported and logged.
//
// Several API servers sharing one etcd would each allocate from their own
// memory and could hand out one value twice until a Repair notices; the
// etcd backend's answer would be to store one key per allocated value with
// a create-if-absent — podkit runs one API server per store today.
//
// Dry runs reserve nothing: requested values are checked (range, taken)
// and dynamic ones only picked, so a dry-run response shows a plausible
// cluster IP rather than Kubernetes' placeholder network address.
package servicealloc
