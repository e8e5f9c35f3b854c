package fieldmanager

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/podkit/podkit/apiserver/defaults"
	"github.com/podkit/podkit/apiserver/scheme"
)

// createBothWays records the create of obj with the fast path and with the
// library's path, on copies, and returns both results and whether the fast
// path covered the object.
func createBothWays(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind, opts UpdateOptions) (fast, slow runtime.Object, covered bool) {
	t.Helper()
	fastM, _ := newManager(t)
	slowM, _ := newManager(t)
	slowM.slowCreate = true
	ctx := context.Background()

	probe := obj.DeepCopyObject()
	covered = fastM.createFields(probe, gvk, ManagerName(opts.FieldManager, opts.UserAgent))

	fast, err := fastM.Update(ctx, nil, obj.DeepCopyObject(), gvk, opts)
	require.NoError(t, err)
	slow, err = slowM.Update(ctx, nil, obj.DeepCopyObject(), gvk, opts)
	require.NoError(t, err)
	return fast, slow, covered
}

// requireSameFields fails unless both paths produced the same object:
// the same managedFields entries, byte for byte, and the same rest.
func requireSameFields(t *testing.T, fast, slow runtime.Object) {
	t.Helper()
	fa, err := meta.Accessor(fast)
	require.NoError(t, err)
	sa, err := meta.Accessor(slow)
	require.NoError(t, err)
	fm, sm := fa.GetManagedFields(), sa.GetManagedFields()
	require.Equal(t, len(sm), len(fm), "number of managedFields entries")
	for i := range sm {
		require.Equal(t, string(sm[i].FieldsV1.Raw), string(fm[i].FieldsV1.Raw), "fields of entry %d", i)
	}
	require.Equal(t, sm, fm)
	require.True(t, apiequality.Semantic.DeepEqual(slow, fast), "objects differ")
}

// createTable lists objects as clients create them (YAML, defaulted as the
// REST layer does), covering every list and map flavour of the schema:
// keyed lists with defaulted keys, sets, atomic lists, granular and atomic
// maps, quantities, times, byte strings, duplicates, explicit empties.
var createTable = []struct {
	name string
	obj  runtime.Object
	yaml string
}{
	{"pod", &corev1.Pod{}, `
metadata: {name: web, namespace: default, labels: {app: web, tier: fe}, annotations: {a: b}}
spec:
  containers:
  - name: web
    image: nginx:1.27
    args: [--port=8080]
    ports: [{name: http, containerPort: 8080}, {containerPort: 9090, protocol: UDP}]
    env: [{name: A, value: "1"}, {name: B, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
    resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: "1"}}
    readinessProbe: {httpGet: {path: /healthz, port: http}}
    volumeMounts: [{name: data, mountPath: /data}]
  - name: proxy
    image: envoy
  initContainers: [{name: init, image: busybox, command: [sh, -c, "true"]}]
  volumes: [{name: data, emptyDir: {}}, {name: cfg, configMap: {name: cfg, items: [{key: a, path: a}]}}]
  tolerations: [{key: k, operator: Exists, effect: NoSchedule}]
  nodeSelector: {disk: ssd}
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: web}}
        topologyKey: kubernetes.io/hostname
  topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}]
  securityContext: {runAsUser: 1000, fsGroup: 2000}
  hostAliases: [{ip: 127.0.0.1, hostnames: [a, b]}]
`},
	{"pod with duplicate env and ports", &corev1.Pod{}, `
metadata: {name: dup, namespace: default}
spec:
  containers:
  - name: c
    image: x
    env: [{name: A, value: "1"}, {name: A, value: "2"}, {name: B}]
    ports: [{containerPort: 80}, {containerPort: 80}]
`},
	{"pod with status, owner and finalizers", &corev1.Pod{}, `
metadata:
  generateName: web-
  namespace: default
  finalizers: [a/b, c/d]
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: "123", controller: true}]
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels: {}
spec:
  containers: [{name: c, image: x}]
  nodeName: worker-1
status: {phase: Running, podIP: 10.0.0.1, conditions: [{type: Ready, status: "True"}]}
`},
	{"pod with empty containers", &corev1.Pod{}, `
metadata: {name: empty, namespace: default}
spec: {containers: []}
`},
	{"bare pod", &corev1.Pod{}, `
metadata: {name: bare}
`},
	{"deployment", &appsv1.Deployment{}, deployYAML},
	{"replicaset", &appsv1.ReplicaSet{}, `
metadata: {name: rs, namespace: default}
spec:
  replicas: 2
  selector: {matchExpressions: [{key: app, operator: In, values: [a, b]}]}
  template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: x}]}}
`},
	{"service", &corev1.Service{}, `
metadata: {name: svc, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}, {name: dns, port: 53, protocol: UDP}]
  type: NodePort
  clusterIPs: [10.0.0.10]
  ipFamilies: [IPv4]
`},
	{"node", &corev1.Node{}, `
metadata: {name: worker-1, labels: {kubernetes.io/hostname: worker-1}}
spec: {podCIDR: 10.244.1.0/24, taints: [{key: k, value: v, effect: NoSchedule}]}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  addresses: [{type: InternalIP, address: 10.0.0.1}, {type: Hostname, address: worker-1}]
  conditions: [{type: Ready, status: "True", lastHeartbeatTime: "2026-01-01T00:00:00Z"}]
  images: [{names: [nginx], sizeBytes: 1000}]
  nodeInfo: {kubeletVersion: v1.33.0}
`},
	{"core event", &corev1.Event{}, `
metadata: {name: web.1, namespace: default}
involvedObject: {kind: Pod, namespace: default, name: web, uid: "1"}
reason: Scheduled
message: Successfully assigned default/web to worker-1
source: {component: default-scheduler}
firstTimestamp: "2026-01-01T00:00:00Z"
type: Normal
count: 1
`},
	{"events.k8s.io event", &eventsv1.Event{}, `
metadata: {name: web.2, namespace: default}
eventTime: "2026-01-01T00:00:00.123456Z"
reportingController: default-scheduler
reportingInstance: default-scheduler-1
action: Binding
reason: Scheduled
regarding: {kind: Pod, namespace: default, name: web}
note: Successfully assigned
type: Normal
`},
	{"configmap", &corev1.ConfigMap{}, `
metadata: {name: cm, namespace: default}
data: {a: "1", b: ""}
binaryData: {bin: AAEC}
`},
	{"secret", &corev1.Secret{}, `
metadata: {name: s, namespace: default}
data: {password: cGFzcw==}
stringData: {user: admin}
type: Opaque
`},
	{"namespace", &corev1.Namespace{}, `
metadata: {name: team-a}
`},
	{"serviceaccount", &corev1.ServiceAccount{}, `
metadata: {name: sa, namespace: default}
secrets: [{name: token}]
`},
	{"endpoints", &corev1.Endpoints{}, `
metadata: {name: svc, namespace: default}
subsets: [{addresses: [{ip: 10.0.0.1}], ports: [{port: 80}]}]
`},
	{"endpointslice", &discoveryv1.EndpointSlice{}, `
metadata: {name: svc-abc, namespace: default}
addressType: IPv4
endpoints: [{addresses: [10.0.0.1], conditions: {ready: true}}]
ports: [{name: http, port: 80}]
`},
	{"lease", &coordinationv1.Lease{}, `
metadata: {name: node, namespace: kube-node-lease}
spec: {holderIdentity: worker-1, leaseDurationSeconds: 40, renewTime: "2026-01-01T00:00:00.000001Z"}
`},
	{"job", &batchv1.Job{}, `
metadata: {name: job, namespace: default}
spec:
  template: {spec: {restartPolicy: Never, containers: [{name: c, image: x}]}}
`},
	{"clusterrole", &rbacv1.ClusterRole{}, `
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [get, list]}]
`},
	{"limitrange", &corev1.LimitRange{}, `
metadata: {name: lr, namespace: default}
spec: {limits: [{type: Container, default: {cpu: 500m}, defaultRequest: {cpu: 100m}}]}
`},
}

func TestCreateFieldsMatchesLibrary(t *testing.T) {
	s := scheme.New()
	for _, tc := range createTable {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.obj.DeepCopyObject()
			require.NoError(t, yaml.UnmarshalStrict([]byte(tc.yaml), obj))
			defaults.Default(obj)
			gvks, _, err := s.ObjectKinds(obj)
			require.NoError(t, err)
			for _, opts := range []UpdateOptions{{UserAgent: kubectlUA}, {FieldManager: "kube-scheduler"}, {}} {
				fast, slow, covered := createBothWays(t, obj, gvks[0], opts)
				assert.True(t, covered, "the fast path should cover %s", tc.name)
				requireSameFields(t, fast, slow)
			}
		})
	}
}

// TestCreateFieldsLeavesTheRestToTheLibrary: objects the fast path does
// not take are recorded exactly as before.
func TestCreateFieldsLeavesTheRestToTheLibrary(t *testing.T) {
	withFields := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", ManagedFields: []metav1.ManagedFieldsEntry{{
		Manager: "someone", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:a":{}}}`)},
	}}}, Data: map[string]string{"a": "1"}}
	reset := withFields.DeepCopy()
	reset.ManagedFields = []metav1.ManagedFieldsEntry{}
	keyless := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}, Secrets: []corev1.ObjectReference{{Namespace: "x"}}}
	for _, tc := range []struct {
		name    string
		obj     runtime.Object
		gvk     schema.GroupVersionKind
		covered bool
	}{
		{"client-set managedFields", withFields, cmGVK, false},
		{"reset managedFields", reset, cmGVK, true},
		{"list item without its key", keyless, corev1.SchemeGroupVersion.WithKind("ServiceAccount"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast, slow, covered := createBothWays(t, tc.obj, tc.gvk, UpdateOptions{FieldManager: "m"})
			assert.Equal(t, tc.covered, covered)
			requireSameFields(t, fast, slow)
		})
	}
}

// TestCreateFieldsRandomObjects compares both paths on randomly filled
// objects of every kind of the table; whatever the fast path takes must
// come out as the library's.
func TestCreateFieldsRandomObjects(t *testing.T) {
	s := scheme.New()
	f, _ := newFiller(t)
	covered := 0
	total := 0
	for _, tc := range createTable {
		gvks, _, err := s.ObjectKinds(tc.obj)
		require.NoError(t, err)
		for range 20 {
			obj := tc.obj.DeepCopyObject()
			f.Fill(obj)
			a, _ := meta.Accessor(obj)
			a.SetManagedFields(nil)
			a.SetResourceVersion("")
			fast, slow, ok := createBothWays(t, obj, gvks[0], UpdateOptions{FieldManager: "fuzz"})
			requireSameFields(t, fast, slow)
			total++
			if ok {
				covered++
			}
		}
	}
	t.Logf("fast path covered %d of %d random objects", covered, total)
}

// TestCreateFieldsReusesTheLatestJSONOnlyForTheSameSet: one Manager records
// a sequence of creates of one kind whose field sets repeat and change;
// each must come out as the library records it.
func TestCreateFieldsReusesTheLatestJSONOnlyForTheSameSet(t *testing.T) {
	fastM, _ := newManager(t)
	slowM, _ := newManager(t)
	slowM.slowCreate = true
	ctx := context.Background()
	cm := func(keys ...string) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default"}, Data: map[string]string{}}
		for _, k := range keys {
			c.Data[k] = "v"
		}
		return c
	}
	for i, obj := range []*corev1.ConfigMap{cm("a"), cm("a"), cm("b"), cm("a", "b"), cm("a", "b"), cm(), cm("a")} {
		fast, err := fastM.Update(ctx, nil, obj.DeepCopy(), cmGVK, UpdateOptions{FieldManager: "m"})
		require.NoError(t, err)
		slow, err := slowM.Update(ctx, nil, obj.DeepCopy(), cmGVK, UpdateOptions{FieldManager: "m"})
		require.NoError(t, err, "create %d", i)
		requireSameFields(t, fast, slow)
	}
	first, err := fastM.Update(ctx, nil, cm("a"), cmGVK, UpdateOptions{FieldManager: "m"})
	require.NoError(t, err)
	second, err := fastM.Update(ctx, nil, cm("a"), cmGVK, UpdateOptions{FieldManager: "m"})
	require.NoError(t, err)
	raw := first.(*corev1.ConfigMap).ManagedFields[0].FieldsV1.Raw
	raw[0] = 'X' // each object owns its bytes
	assert.NotEqual(t, raw, second.(*corev1.ConfigMap).ManagedFields[0].FieldsV1.Raw)
}
