package admission

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestResourceQuotaScopes(t *testing.T) {
	bestEffort := func(name string) *corev1.Pod { return newPod(name, ctr("app", nil, nil)) }
	burstable := func(name string) *corev1.Pod { return newPod(name, ctr("app", rl("cpu", "100m"), nil)) }
	withDeadline := func(p *corev1.Pod) *corev1.Pod { p.Spec.ActiveDeadlineSeconds = ptrTo(int64(60)); return p }
	withClass := func(p *corev1.Pod, class string) *corev1.Pod { p.Spec.PriorityClassName = class; return p }
	crossNS := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone", Namespaces: []string{"other"}}},
		}}
		return p
	}
	priorityIn := func(values ...string) *corev1.ResourceQuota {
		q := quota("scoped", rl("pods", "0"))
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: values,
		}}}
		return q
	}

	tests := []struct {
		name    string
		quota   *corev1.ResourceQuota
		pod     *corev1.Pod
		blocked bool
	}{
		{name: "BestEffort matches best-effort pod", quota: quota("scoped", rl("pods", "0"), corev1.ResourceQuotaScopeBestEffort), pod: bestEffort("p"), blocked: true},
		{name: "BestEffort ignores burstable pod", quota: quota("scoped", rl("pods", "0"), corev1.ResourceQuotaScopeBestEffort), pod: burstable("p")},
		{name: "NotBestEffort matches burstable pod", quota: quota("scoped", rl("pods", "0"), corev1.ResourceQuotaScopeNotBestEffort), pod: burstable("p"), blocked: true},
		{name: "NotBestEffort ignores best-effort pod", quota: quota("scoped", rl("pods", "0"), corev1.ResourceQuotaScopeNotBestEffort), pod: bestEffort("p")},
		{name: "Terminating matches pod with deadline", quota: quota("scoped", rl("pods", "0"), corev1.ResourceQuotaScopeTerminating), pod: withDeadline(bestEffort("p")), blocked: true},
		{name: "Terminating ignores pod without deadline", quota: quota("scoped", rl("pods", "0"), corev1.ResourceQuotaScopeTerminating), pod: bestEffort("p")},
		{name: "NotTerminating matches pod without deadline", quota: quota("scoped", rl("pods", "0"), corev1.ResourceQuotaScopeNotTerminating), pod: bestEffort("p"), blocked: true},
		{name: "two scopes must both match", quota: quota("scoped", rl("pods", "0"), corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort), pod: bestEffort("p")},
		{name: "PriorityClass In matches", quota: priorityIn("high"), pod: withClass(bestEffort("p"), "high"), blocked: true},
		{name: "PriorityClass In ignores other class", quota: priorityIn("high"), pod: withClass(bestEffort("p"), "low")},
		{name: "CrossNamespacePodAffinity", quota: quota("scoped", rl("pods", "0"), corev1.ResourceQuotaScopeCrossNamespacePodAffinity), pod: crossNS(bestEffort("p")), blocked: true},
		{name: "CrossNamespacePodAffinity ignores plain pods", quota: quota("scoped", rl("pods", "0"), corev1.ResourceQuotaScopeCrossNamespacePodAffinity), pod: bestEffort("p")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newQuotaFixture(t)
			f.store.put(t, resourceQuotasGR, tt.quota)
			err := f.plugin.Validate(context.Background(), createPod("team", tt.pod))
			if tt.blocked {
				requireStatus(t, err, http.StatusForbidden,
					`pods "p" is forbidden: exceeded quota: scoped, requested: pods=1, used: pods=0, limited: pods=0`)
			} else {
				assert.NoError(t, err)
			}
		})
	}

	// Scoped quotas count only matching pods in their usage too.
	f := newQuotaFixture(t)
	f.store.put(t, resourceQuotasGR, quota("best-effort", rl("pods", "2"), corev1.ResourceQuotaScopeBestEffort))
	f.store.put(t, podsGR, storedPod("be", corev1.PodRunning, ctr("app", nil, nil)),
		storedPod("burst", corev1.PodRunning, ctr("app", rl("cpu", "1"), nil)))
	require.NoError(t, f.plugin.Validate(context.Background(), createPod("team", bestEffort("p"))))
	assertQuantities(t, rl("pods", "2"), f.status(t, "best-effort").Used)
}

func TestResourceQuotaServices(t *testing.T) {
	svc := func(name string, typ corev1.ServiceType, ports int) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}, Spec: corev1.ServiceSpec{Type: typ}}
		for i := range ports {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: int32(80 + i)})
		}
		return s
	}
	f := newQuotaFixture(t)
	f.store.put(t, resourceQuotasGR, quota("svc", rl("services", "3", "services.nodeports", "2", "services.loadbalancers", "0")))
	f.store.put(t, servicesGR, svc("db", corev1.ServiceTypeClusterIP, 1))
	ctx := context.Background()

	requireStatus(t, f.plugin.Validate(ctx, attrs(Create, "services", "team", "web", svc("web", corev1.ServiceTypeNodePort, 3), nil)),
		http.StatusForbidden, `services "web" is forbidden: exceeded quota: svc, requested: services.nodeports=3, used: services.nodeports=0, limited: services.nodeports=2`)
	requireStatus(t, f.plugin.Validate(ctx, attrs(Create, "services", "team", "lb", svc("lb", corev1.ServiceTypeLoadBalancer, 1), nil)),
		http.StatusForbidden, `services "lb" is forbidden: exceeded quota: svc, requested: services.loadbalancers=1, used: services.loadbalancers=0, limited: services.loadbalancers=0`)
	require.NoError(t, f.plugin.Validate(ctx, attrs(Create, "services", "team", "web", svc("web", corev1.ServiceTypeNodePort, 2), nil)))
	assertQuantities(t, rl("services", "2", "services.nodeports", "2", "services.loadbalancers", "0"), f.status(t, "svc").Used)

	// Updating the stored ClusterIP service to NodePort charges the difference.
	old := f.store.get(t, servicesGR, "team", "db").(*corev1.Service)
	next := old.DeepCopy()
	next.Spec.Type = corev1.ServiceTypeNodePort
	requireStatus(t, f.plugin.Validate(ctx, attrs(Update, "services", "team", "db", next, old)), http.StatusForbidden,
		`services "db" is forbidden: exceeded quota: svc, requested: services.nodeports=1, used: services.nodeports=2, limited: services.nodeports=2`)
	unchanged := old.DeepCopy()
	unchanged.Labels = map[string]string{"a": "b"}
	assert.NoError(t, f.plugin.Validate(ctx, attrs(Update, "services", "team", "db", unchanged, old)))
}

func TestResourceQuotaObjectCounts(t *testing.T) {
	f := newQuotaFixture(t)
	f.store.put(t, resourceQuotasGR, quota("counts", rl(
		"configmaps", "1", "count/secrets", "5", "count/deployments.apps", "1", "persistentvolumeclaims", "2",
		"requests.storage", "10Gi", "gold.storageclass.storage.k8s.io/requests.storage", "1Gi", "example.com/widgets", "3")))
	f.store.put(t, schema.GroupResource{Resource: "configmaps"}, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "old"}})
	ctx := context.Background()

	requireStatus(t, f.plugin.Validate(ctx, attrs(Create, "configmaps", "team", "cfg", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}}, nil)),
		http.StatusForbidden, `configmaps "cfg" is forbidden: exceeded quota: counts, requested: configmaps=1, used: configmaps=1, limited: configmaps=1`)
	assert.NoError(t, f.plugin.Validate(ctx, attrs(Create, "secrets", "team", "s", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, nil)))

	deploy := &Attributes{Operation: Create, Namespace: "team", Name: "web",
		Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		Object:   &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web"}}} // the type does not matter for counting
	require.NoError(t, f.plugin.Validate(ctx, deploy))
	f.store.put(t, schema.GroupResource{Group: "apps", Resource: "deployments"}, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}})
	deploy.Name = "api"
	deploy.Object = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "api"}}
	requireStatus(t, f.plugin.Validate(ctx, deploy), http.StatusForbidden,
		`deployments.apps "api" is forbidden: exceeded quota: counts, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1`)

	gold := "gold"
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: &gold, Resources: corev1.VolumeResourceRequirements{Requests: rl("storage", "2Gi")}}}
	requireStatus(t, f.plugin.Validate(ctx, attrs(Create, "persistentvolumeclaims", "team", "data", claim, nil)), http.StatusForbidden,
		`persistentvolumeclaims "data" is forbidden: exceeded quota: counts, requested: gold.storageclass.storage.k8s.io/requests.storage=2Gi, used: gold.storageclass.storage.k8s.io/requests.storage=0, limited: gold.storageclass.storage.k8s.io/requests.storage=1Gi`)

	assertQuantities(t, rl("configmaps", "1", "count/secrets", "1", "count/deployments.apps", "1", "persistentvolumeclaims", "0",
		"requests.storage", "0", "gold.storageclass.storage.k8s.io/requests.storage", "0", "example.com/widgets", "0"),
		f.status(t, "counts").Used)
}

func TestTrackingResource(t *testing.T) {
	tests := []struct {
		name corev1.ResourceName
		gr   schema.GroupResource
		ok   bool
	}{
		{name: "pods", gr: podsGR, ok: true},
		{name: "count/pods", gr: podsGR, ok: true},
		{name: "limits.memory", gr: podsGR, ok: true},
		{name: "requests.example.com/fpga", gr: podsGR, ok: true},
		{name: "hugepages-1Gi", gr: podsGR, ok: true},
		{name: "services.nodeports", gr: servicesGR, ok: true},
		{name: "requests.storage", gr: persistentVolumeClaimsGR, ok: true},
		{name: "fast.storageclass.storage.k8s.io/persistentvolumeclaims", gr: persistentVolumeClaimsGR, ok: true},
		{name: "secrets", gr: schema.GroupResource{Resource: "secrets"}, ok: true},
		{name: "count/jobs.batch", gr: schema.GroupResource{Group: "batch", Resource: "jobs"}, ok: true},
		{name: "count/widgets.example.com", gr: schema.GroupResource{Group: "example.com", Resource: "widgets"}, ok: true},
		{name: "requests.kubernetes.io/thing", ok: false},
		{name: "example.com/widgets", ok: false},
		{name: "count/", ok: false},
	}
	for _, tt := range tests {
		t.Run(string(tt.name), func(t *testing.T) {
			gr, ok := trackingResource(tt.name)
			assert.Equal(t, tt.ok, ok)
			if tt.ok {
				assert.Equal(t, tt.gr, gr)
				assert.True(t, evaluatorFor(gr).tracks(tt.name), "the evaluator must track what maps to it")
			}
		})
	}
}
