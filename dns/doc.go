// Package dns is podkit's embedded cluster DNS: the server that answers
// `<service>.<namespace>.svc.<domain>` for pods, like CoreDNS with its
// kubernetes plugin (`pods insecure`, `fallthrough in-addr.arpa ip6.arpa`)
// followed by `forward . <upstreams>`.
//
// In podkit's birth sequence it is part of the last step (16): once the
// EndpointSlice controller has published a Service's ready endpoints and
// the proxy routes its ClusterIP, pods that resolve the Service's name
// through the nameserver the kubelet wrote into their resolv.conf (step 9)
// reach it.
//
// # Records
//
// The server follows the Kubernetes DNS-Based Service Discovery
// specification (github.com/kubernetes/dns, docs/specification.md, schema
// 1.1.0). Names are compared case-insensitively; answers carry the
// question's spelling.
//
//   - dns-version.<zone> TXT "1.1.0".
//   - <svc>.<ns>.svc.<zone> A/AAAA: the Service's ClusterIPs of that family;
//     for a headless Service (clusterIP None) one record per ready endpoint
//     address in its EndpointSlices (NXDOMAIN when none is ready).
//   - <svc>.<ns>.svc.<zone> CNAME for an ExternalName Service, chased through
//     the cluster zone or the upstreams so stub resolvers get addresses.
//   - <host>.<svc>.<ns>.svc.<zone> A/AAAA for a headless Service's ready
//     endpoints, <host> being the endpoint's hostname (a StatefulSet pod's
//     name) or, without one, its dashed address (10-244-1-5).
//   - _<port>._<proto>.<svc>.<ns>.svc.<zone> SRV for named ports: one record
//     targeting the Service name (ClusterIP Services) or one per ready
//     endpoint targeting <host>.<svc>.<ns>.svc.<zone> with the endpoint's
//     port (headless), with the targets' addresses in the additional
//     section. An SRV question for the Service name itself lists all named
//     ports.
//   - <a-b-c-d>.<ns>.pod.<zone> A (and dashed IPv6 with AAAA) for any
//     address — the deprecated "insecure" pod records.
//   - PTR in in-addr.arpa and ip6.arpa for ClusterIPs and for the ready
//     endpoints of headless Services; other reverse names are forwarded.
//   - SOA and NS at the zone apex.
//
// NXDOMAIN and NODATA are told apart the way the spec and CoreDNS do: a
// name that exists (the apex, svc.<zone>, <ns>.svc.<zone> when the
// namespace has a Service, a Service, a named port) answers NOERROR with
// an empty answer section for a type it has no records of; names that do
// not exist answer NXDOMAIN. Both carry the zone's SOA in the authority
// section, whose minimum TTL (the TTL setting) bounds negative caching.
// Names deeper than any schema allows — the ones an ndots:5 search list
// produces first, like web.default.svc.cluster.local.default.svc.cluster.local
// — are NXDOMAIN at once from the label count, without a lookup.
//
// # Data
//
// The server reads Services and EndpointSlices (discovery.k8s.io/v1) through
// client-go informers and answers straight from their indexed caches, so an
// update is visible as soon as the watch event arrives and no per-change
// rebuild happens. Endpoints from all of a Service's slices are merged and
// de-duplicated by address (slices overlap while the controller moves
// endpoints); ready means the endpoint's ready condition is true or unset,
// or the Service publishes not-ready addresses. Pods are not watched: pod
// records are the insecure form, which is what CoreDNS's default Corefile
// serves too.
//
// # Transport
//
// The server listens on UDP and TCP on the same address. UDP answers are
// truncated (TC set) to 512 bytes or the client's EDNS0 buffer size, and
// the client retries over TCP, which carries up to 64 KiB. Questions
// outside the cluster zone are forwarded to Config.Upstreams (tried in
// turn from a rotating start, over the client's transport) or, when there
// are none, refused.
//
// # Where pods reach it
//
// The kubelet writes the cluster DNS address (conventionally 10.96.0.10,
// the second IP of the service CIDR) into ClusterFirst pods' resolv.conf.
// The listener is deliberately flexible so a composition can pick how that
// address reaches the server:
//
//   - As a Service: a `kube-dns` Service in kube-system with clusterIP
//     10.96.0.10 and a selector-less EndpointSlice naming the address the
//     server listens on (a node address such as the pod bridge's gateway).
//     The proxy DNATs 10.96.0.10:53 like any ClusterIP. This is the default
//     shape and needs nothing special here: Config.Addr "10.244.0.1:53".
//     podkit's Node does this per node (services.go in the root package):
//     ListenFreebind binds the gateway before the bridge exists, and the
//     Service's internalTrafficPolicy Local sends each node's pods to
//     their own node's server.
//   - Node-local: the server binds 10.96.0.10:53 itself in the host network
//     namespace, with the address on a dummy interface (as NodeLocal
//     DNSCache does with 169.254.20.10); the proxy must then not DNAT it.
//   - In a namespace: ListenIn opens the sockets inside another network
//     namespace (a pod-like "dns" namespace with an address of its own, or
//     one where 10.96.0.10 is assigned) through cni/netns.Do; the sockets
//     keep that namespace after the thread leaves it, and the server serves
//     them from ordinary goroutines. Pass them as Config.Sockets.
//
// Upstreams are explicit "ip:port" addresses; HostUpstreams derives them
// from a resolv.conf (the host's) for the forward-to-the-node's-resolver
// default. A loopback upstream (systemd-resolved's 127.0.0.53) only works
// while the server's sockets live in the host's namespace.
//
// # Metrics
//
// The names are CoreDNS's (coredns_dns_requests_total,
// coredns_dns_responses_total, coredns_dns_request_duration_seconds,
// coredns_forward_requests_total, coredns_forward_responses_total) so the
// usual cluster DNS dashboards and alerts work unchanged; zone is the
// cluster zone for its questions and "." for the rest.
package dns
