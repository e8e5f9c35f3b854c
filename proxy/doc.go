// Package proxy is podkit's per-node service proxy: it makes a Service's
// ClusterIP:port reach a random ready endpoint, from pods and from the
// host, with nftables, in the manner of kube-proxy's nftables mode.
//
// In the birth sequence it is the last step (16): once the EndpointSlice
// controller lists a pod among the ready endpoints of a Service, the proxy
// on every node programs the rules that send the Service's traffic to it.
// A Proxier watches Services and EndpointSlices (discovery.k8s.io/v1,
// grouped by the kubernetes.io/service-name label) through client-go
// informers and owns one nftables table (family ip, default
// "podkit-proxy") in the node's network namespace:
//
//	table ip podkit-proxy {
//	  map service-ips           ClusterIP . proto . port : goto svc_<ns>_<name>_<port>_<proto>
//	  map no-endpoint-services  ClusterIP . proto . port : goto reject-chain | drop
//	  set cluster-ips           every programmed ClusterIP
//	  set affinity-endpoints    port id . addr . port, for ClientIP affinity
//	  map eps_<...>             per port with several endpoints: index : addr . port
//	  map aff_<...>_<timeout>   per port with ClientIP affinity: client : addr . port (dynamic, timeout)
//
//	  chain nat-prerouting  (nat, prerouting, dstnat)   jump services      traffic from pods and other hosts
//	  chain nat-output      (nat, output, dstnat)       jump services      traffic from the host itself
//	  chain services        ip daddr . meta l4proto . th dport vmap @service-ips
//	  chain svc_<...>       dnat to numgen random mod N map @eps_<...>   (or dnat to the one endpoint)
//	  chain filter-input / filter-forward / filter-output (filter, dstnat-10)
//	                        ct state new: vmap @no-endpoint-services
//	  chain filter-input    also drops untranslated 127.0.0.0/8 traffic not from lo (below)
//	  chain filter-forward  also marks hairpin connections (below)
//	  chain nat-postrouting (nat, postrouting, srcnat)  masquerade marked or off-cluster traffic
//	}
//
// # Load balancing
//
// A port with one endpoint is a plain "dnat to addr:port". A port with
// several has a small map from index to endpoint, and its chain picks one
// with numgen random mod N: every new connection draws uniformly, and
// conntrack keeps the choice for the connection's life. Only ready
// endpoints are used; when none is ready, endpoints that are serving while
// terminating are (as kube-proxy does, so a rolling update drains rather
// than fails). internalTrafficPolicy: Local keeps this node's endpoints
// only. A port without usable endpoints is rejected at once — TCP reset
// for TCP, ICMP port unreachable otherwise (a host process sending UDP
// sees its write fail) — or dropped when it has endpoints on other nodes
// but, with policy Local, none here. sessionAffinity: ClientIP remembers
// each client's endpoint in a dynamic map with the Service's timeout
// (default 3 h); a remembered endpoint that is gone is replaced.
//
// # Masquerading, hairpin, and br_netfilter
//
// Pods on a Linux bridge reach a ClusterIP through the node's routing,
// not through the bridge: the ClusterIP is not on the bridge's subnet, so
// a pod sends to its gateway and the node's prerouting DNATs the packet
// before routing it. No br_netfilter is needed for that. It is needed in
// kube-proxy's model for the way back: when the chosen endpoint sits on
// the same bridge as the client, its reply is switched straight to the
// client, skipping the node's un-DNAT, and the client drops a reply that
// comes from the wrong address. Here the forward hook marks every
// service connection routed back out of the interface it came in on
// ("fib daddr . iif oif": a pod reaching itself — hairpin — or a
// neighbour on its bridge), and postrouting masquerades it to the
// bridge's address, so replies return through the node whatever the
// bridge-nf-call-iptables setting. The price: such connections show the
// bridge's address, not the client pod's, as their source. Service
// traffic whose source is outside ClusterCIDR (the host, or a machine
// routing the service range to this node) is masqueraded too, so replies
// come back through this node. The mark bit is configurable (default
// 0x4000, as kube-proxy's).
//
// The node needs a route covering the service range: locally sent
// packets are routed before the output hook can translate them. The proxy
// adds no route and no address; podkit's Node routes the range locally
// (never to the default route).
//
// Endpoints on 127.0.0.0/8 (an API server bound to loopback behind the
// `kubernetes` Service) work for pods when the composition sets
// route_localnet on the pods' bridge; the input chain then drops any
// packet for 127.0.0.0/8 that arrives on another interface than lo
// without having been translated by a Service rule (CVE-2020-8558, the
// guard kube-proxy installs too).
//
// # Syncing
//
// Every Service port has its own chain (and maps). A change rewrites only
// what the changed Services need — an endpoint replaced by another is one
// element replaced in the port's endpoints map; a change in their number
// also rewrites the chain's one rule — in one netlink transaction;
// nothing is flushed wholesale. Chains and maps that fall out of use are emptied in that
// transaction and deleted in a second one right after (kernels before 6.2
// may still count a just-removed reference). Changes are coalesced: at
// most one sync per MinSyncPeriod (default: as soon as possible). Every
// SyncPeriod (default 30 s), after a failure, and on the first sync, a
// full sync rewrites the whole table in one transaction, adopting what a
// crashed predecessor left and removing what no longer exists, while
// keeping ClientIP affinity state. After a sync, UDP conntrack entries
// towards removed endpoints (and those of ports that just got endpoints)
// are deleted so datagrams do not keep flowing to a dead backend. On
// shutdown (Run's context ends) the table is deleted; Cleanup removes a
// crashed proxy's table.
//
// Transactions are marshalled by github.com/google/nftables (netlink, no
// nft binary, no exec; chosen over sigs.k8s.io/knftables, which drives
// the nft binary through text) but sent on the proxy's own netlink
// socket asking for one acknowledgement per transaction instead of one
// per message plus an echo per rule: with 1,000 Services that is most of a
// full sync's time. The socket stays open between syncs (closing an
// nftables socket waits out an RCU grace period).
//
// Metrics follow kube-proxy's names: kubeproxy_sync_proxy_rules_duration_seconds
// (and its _full_ and _partial_ variants), kubeproxy_sync_proxy_rules_last_timestamp_seconds,
// kubeproxy_network_programming_duration_seconds (from the EndpointSlice's
// endpoints.kubernetes.io/last-change-trigger-time annotation to the end
// of the sync that programs it) and
// kubeproxy_sync_proxy_rules_nftables_sync_failures_total.
//
// # Scope
//
// Only ClusterIPs are proxied: NodePort, LoadBalancer and externalIPs,
// topology hints, externalTrafficPolicy, and IPv6 (family ip6) are left to
// later work; an
// IPv6-only Service is skipped, a dual-stack one is proxied on its IPv4
// ClusterIP. Headless and ExternalName Services have nothing to proxy
// (cluster DNS answers for them), and Services or EndpointSlices labelled
// service.kubernetes.io/service-proxy-name belong to another proxy.
package proxy
