// Package apiserver is step 1 of the birth sequence: the Kubernetes-compatible
// REST front door that kubectl and client-go talk to.
//
// A request flows: filters (panic recovery, in-flight limit, body cap,
// metrics) → routing (/api, /apis, discovery, /openapi, /version, health) →
// the generic REST handlers (get, list, watch, create, update, patch, delete,
// deletecollection and the status, scale, binding and finalize subresources;
// pods/log is streamed from the pod's kubelet through Config.KubeletClient)
// → admission (apiserver/admission: mutators, the object's validation,
// validators) → storage (apiserver/storage), whose watch feeds every
// component downstream: the scheduler, the kubelets and the controllers.
//
// Services get their cluster IP (Config.ServiceClusterIPRange, default
// 10.96.0.0/12) and node ports between validation and validating admission.
// Each allocated value is a record in the store (an IPAddress object per
// cluster IP, a podkit record per node port) whose atomic create is the
// allocation, as Kubernetes' MultiCIDRServiceAllocator does, so several API
// servers sharing one store (etcd) never hand out a value twice; the
// allocator (apiserver/servicealloc) keeps an in-memory bitmap only as a
// hint, gives records back when the write fails, and RunControllers repairs
// records against the stored Services. The server also keeps its own
// `kubernetes` service in `default` — 10.96.0.1:443 with one endpoint per
// live API server (each renews a Lease in kube-system with its
// Config.AdvertiseAddress and port) — created at Bootstrap (or once Serve
// knows the port) and recreated when deleted.
//
// Objects are the versioned k8s.io/api types throughout — there is no
// internal version — encoded with apimachinery's JSON, YAML and protobuf
// serializers, so unmodified kubectl and client-go work against it.
package apiserver
