package fieldmanager

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const lastApplied = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"web","namespace":"default"},"spec":{"replicas":3}}`

// otherCases are the common writes of other kinds: controllers'
// status, scaling, kubectl edits, heartbeats, lease renewals, event
// counts.
func otherCases() []updateCase {
	one := int32(1)
	return []updateCase{{
		name: "deployment", obj: fromYAML(&appsv1.Deployment{}, deployYAML), creator: "kubectl-client-side-apply",
		steps: []step{
			{name: "last-applied annotation", opts: UpdateOptions{FieldManager: "kubectl-client-side-apply"}, change: as(func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: lastApplied}
			})},
			{name: "controller status", opts: kcmStatus, change: as(func(d *appsv1.Deployment) {
				d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2, UnavailableReplicas: 1,
					Conditions: []appsv1.DeploymentCondition{
						{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable", LastUpdateTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0)},
						{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated", LastUpdateTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0)},
					}}
			})},
			{name: "scaled", opts: kcm, change: as(func(d *appsv1.Deployment) { d.Spec.Replicas = &one })},
			{name: "status write touching labels and spec", opts: kcmStatus, change: as(func(d *appsv1.Deployment) {
				d.Labels["status-writer"] = "1"
				d.Spec.Paused = true
				d.Status.ReadyReplicas = 1
			})},
			{name: "kubectl edit of the template", opts: UpdateOptions{FieldManager: "kubectl-edit"}, change: as(func(d *appsv1.Deployment) {
				c := &d.Spec.Template.Spec.Containers[0]
				c.Image = "nginx:1.28"
				c.Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
				c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
				d.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-03-01T12:00:00Z"}
			})},
			{name: "labels edited", opts: UpdateOptions{FieldManager: "kubectl-label"}, change: as(func(d *appsv1.Deployment) {
				delete(d.Labels, "tier")
				d.Labels["team"] = "b"
			})},
			{name: "re-applied client-side", opts: UpdateOptions{FieldManager: "kubectl-client-side-apply"}, change: as(func(d *appsv1.Deployment) {
				n := int32(3)
				d.Spec.Replicas = &n
				d.Annotations[corev1.LastAppliedConfigAnnotation] = lastApplied + " "
			})},
		},
	}, {
		name: "node", obj: fromYAML(&corev1.Node{}, `
metadata: {name: worker-1, labels: {kubernetes.io/hostname: worker-1}}
spec: {podCIDR: 10.244.1.0/24}
`), creator: "kubelet",
		steps: []step{
			{name: "first status", opts: UpdateOptions{FieldManager: "kubelet", Subresource: "status"}, change: as(func(n *corev1.Node) {
				n.Status = corev1.NodeStatus{
					Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")},
					Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")},
					Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.11"}, {Type: corev1.NodeHostName, Address: "worker-1"}},
					Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
						LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0)}},
					Images:   []corev1.ContainerImage{{Names: []string{"nginx"}, SizeBytes: 1000}},
					NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.33.0", OSImage: "podkit"},
				}
			})},
			{name: "heartbeat", opts: UpdateOptions{FieldManager: "kubelet", Subresource: "status"}, change: as(func(n *corev1.Node) {
				n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
				n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{"envoy"}, SizeBytes: 2000})
			})},
			{name: "taint by the node controller", opts: kcm, change: as(func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule}}
			})},
			{name: "cordon", opts: UpdateOptions{FieldManager: "kubectl-cordon"}, change: as(func(n *corev1.Node) {
				n.Spec.Unschedulable = true
				n.Spec.Taints = nil
			})},
		},
	}, {
		name: "lease", obj: fromYAML(&coordinationv1.Lease{}, `
metadata: {name: worker-1, namespace: kube-node-lease}
spec: {holderIdentity: worker-1, leaseDurationSeconds: 40, renewTime: "2026-01-01T00:00:00.000001Z"}
`), creator: "kubelet",
		steps: []step{
			{name: "renewal", opts: UpdateOptions{FieldManager: "kubelet"}, change: as(func(l *coordinationv1.Lease) {
				l.Spec.RenewTime = &metav1.MicroTime{Time: t0.Add(10 * time.Second)}
			})},
			{name: "renewal again", opts: UpdateOptions{FieldManager: "kubelet"}, change: as(func(l *coordinationv1.Lease) {
				l.Spec.RenewTime = &metav1.MicroTime{Time: t0.Add(20 * time.Second)}
			})},
			{name: "taken over", opts: UpdateOptions{FieldManager: "other-holder"}, change: as(func(l *coordinationv1.Lease) {
				l.Spec.HolderIdentity = nil
				l.Spec.AcquireTime = &metav1.MicroTime{Time: t0}
				l.Spec.LeaseTransitions = new(int32)
			})},
		},
	}, {
		name: "core event", obj: fromYAML(&corev1.Event{}, `
metadata: {name: web.1, namespace: default}
involvedObject: {kind: Pod, namespace: default, name: web, uid: "1"}
reason: BackOff
message: Back-off restarting failed container
source: {component: kubelet, host: worker-1}
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:00:00Z"
type: Warning
count: 1
`), creator: "kubelet",
		steps: []step{
			{name: "count", opts: UpdateOptions{FieldManager: "kubelet"}, change: as(func(e *corev1.Event) {
				e.Count = 2
				e.LastTimestamp = metav1.NewTime(t0)
			})},
			{name: "count again", opts: UpdateOptions{FieldManager: "kubelet"}, change: as(func(e *corev1.Event) {
				e.Count = 3
			})},
		},
	}, {
		name: "events.k8s.io event series", obj: fromYAML(&eventsv1.Event{}, `
metadata: {name: web.2, namespace: default}
eventTime: "2026-01-01T00:00:00.123456Z"
reportingController: default-scheduler
reportingInstance: default-scheduler-1
action: Scheduling
reason: FailedScheduling
regarding: {kind: Pod, namespace: default, name: web}
note: 0/3 nodes are available
type: Warning
`), creator: "kube-scheduler",
		steps: []step{
			{name: "series", opts: UpdateOptions{FieldManager: "kube-scheduler"}, change: as(func(e *eventsv1.Event) {
				e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.MicroTime{Time: t0}}
			})},
		},
	}, {
		name: "configmap and secret-like data", obj: fromYAML(&corev1.ConfigMap{}, `
metadata: {name: cm, namespace: default}
data: {a: "1", b: ""}
binaryData: {bin: AAEC}
`), creator: "kubectl-create",
		steps: []step{
			{name: "edit", opts: UpdateOptions{FieldManager: "kubectl-edit"}, change: as(func(c *corev1.ConfigMap) {
				c.Data["a"] = "2"
				delete(c.Data, "b")
				c.Data["c"] = "3"
				c.BinaryData["bin"] = []byte{9}
			})},
			{name: "data emptied", opts: UpdateOptions{FieldManager: "kubectl-edit"}, change: as(func(c *corev1.ConfigMap) {
				c.Data = map[string]string{}
				c.BinaryData = nil
			})},
			{name: "immutable", opts: UpdateOptions{FieldManager: "kubectl-patch"}, change: as(func(c *corev1.ConfigMap) {
				c.Immutable = new(bool)
			})},
		},
	}, {
		name: "service", obj: fromYAML(&corev1.Service{}, `
metadata: {name: svc, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}, {name: dns, port: 53, protocol: UDP}]
  type: LoadBalancer
`), creator: "kubectl-create",
		steps: []step{
			{name: "allocation", opts: UpdateOptions{FieldManager: "kube-apiserver"}, change: as(func(s *corev1.Service) {
				s.Spec.ClusterIP = "10.96.0.10"
				s.Spec.ClusterIPs = []string{"10.96.0.10"}
				s.Spec.Ports[0].NodePort = 30080
			})},
			{name: "ports reordered and one added", opts: UpdateOptions{FieldManager: "kubectl-edit"}, change: as(func(s *corev1.Service) {
				p := s.Spec.Ports
				s.Spec.Ports = []corev1.ServicePort{p[1], p[0], {Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}
			})},
			{name: "load balancer status", opts: UpdateOptions{FieldManager: "cloud-controller", Subresource: "status"}, change: as(func(s *corev1.Service) {
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
			})},
		},
	}, {
		name: "endpointslice", obj: fromYAML(&discoveryv1.EndpointSlice{}, `
metadata: {name: svc-abc, namespace: default, labels: {kubernetes.io/service-name: svc}}
addressType: IPv4
endpoints: [{addresses: [10.0.0.1], conditions: {ready: true}}]
ports: [{name: http, port: 80}]
`), creator: "endpointslice-controller.k8s.io",
		steps: []step{
			{name: "endpoints replaced", opts: UpdateOptions{FieldManager: "endpointslice-controller.k8s.io"}, change: as(func(e *discoveryv1.EndpointSlice) {
				ready := false
				e.Endpoints = append(e.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
			})},
		},
	}}
}
