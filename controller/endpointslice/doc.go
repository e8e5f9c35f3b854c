// Package endpointslice holds the controllers that turn Services into the
// addresses traffic goes to: the EndpointSlice controller (Controller) and
// the legacy Endpoints controller (EndpointsController), as
// kube-controller-manager's "endpointslice" and "endpoint" controllers.
//
// In podkit's birth sequence they open step 16: once the kubelet reports a
// pod Running with an IP and Ready (step 15), the pod shows up as a ready
// endpoint of every Service selecting it; the proxy programs the Service's
// ClusterIP towards it and the cluster DNS answers headless names with it.
// A pod whose readiness fails, or that is being deleted, stops being ready
// there, which is how it stops receiving traffic.
//
// # EndpointSlices
//
// For a Service with a selector (ExternalName Services and Services
// without a selector are left to whoever manages their endpoints):
//
//   - every matching pod with an IP that is not Succeeded or Failed is an
//     endpoint, with the conditions ready (Ready condition true and not
//     terminating, or always with publishNotReadyAddresses), serving
//     (Ready condition true) and terminating (deletionTimestamp set); its
//     nodeName, zone (the node's topology.kubernetes.io/zone), targetRef
//     to the pod, and hostname when the pod's subdomain names the Service;
//   - ports are resolved per pod: a numeric targetPort as is, a named one
//     through the pod's container ports (and sidecars') of that name and
//     protocol; a pod without it lacks that port, so it goes into slices of
//     its smaller port set — the slices of a Service are grouped by address
//     type (the Service's IP families) and resolved port set;
//   - at most MaxEndpointsPerSlice (default 100) endpoints per slice;
//     250 pods make 3 slices;
//   - slices are named <service>-<random>, labelled
//     kubernetes.io/service-name, endpointslice.kubernetes.io/managed-by
//     = endpointslice-controller.k8s.io (Kubernetes' value, so consumers and
//     kubectl treat them alike), service.kubernetes.io/headless for Services
//     without a ClusterIP, plus the Service's own labels; they are
//     controlled by the Service (ownerReference), so the garbage collector
//     deletes them with it — and the controller deletes them itself when it
//     sees the Service gone, so a cluster without a garbage collector stays
//     clean;
//   - an address type without endpoints keeps one empty placeholder slice.
//
// Writes are minimal: a sync computes the desired endpoints from the
// caches, keeps each endpoint in the slice already holding it, fills new
// endpoints into slices being rewritten anyway or with room, and writes
// only slices whose endpoints or labels changed (creations before
// deletions, so no endpoint disappears in between). Because the informer
// cache lags behind the controller's own writes, every slice written is
// remembered with its resourceVersion; a sync that finds the cache older
// than that fails with ErrStaleCache and is retried, instead of creating
// duplicates (Kubernetes does the same with slice generations, which
// EndpointSlices in podkit do not bump, having no spec). Written slices
// carry endpoints.kubernetes.io/last-change-trigger-time: the earliest
// pod Ready transition (or the Service's creation) not yet published.
//
// # Endpoints
//
// The Endpoints object <service> lists the same pods, each with its IP of
// the Service's primary family, in subsets grouped by resolved port set:
// ready ones in addresses, the others in notReadyAddresses; terminating
// pods are left out unless the Service publishes not-ready addresses. It
// carries the Service's labels, the trigger-time annotation, and at most
// 1,000 addresses (then endpoints.kubernetes.io/over-capacity: truncated).
// It is rewritten only when its subsets or labels change, and deleted with
// the Service.
//
// Register both with a controller.Manager:
//
//	m.Register(endpointslice.Name, endpointslice.NewFunc(endpointslice.Config{}))
//	m.Register(endpointslice.EndpointsName, endpointslice.NewEndpointsFunc())
package endpointslice
