package admission

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

func quota(name string, hard corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes},
	}
}

func storedPod(name string, phase corev1.PodPhase, containers ...corev1.Container) *corev1.Pod {
	p := newPod(name, containers...)
	p.Namespace = "team"
	p.Status.Phase = phase
	return p
}

type quotaFixture struct {
	plugin *ResourceQuota
	store  *fakeStore
	now    time.Time
}

func newQuotaFixture(t *testing.T) *quotaFixture {
	t.Helper()
	f := &quotaFixture{store: newFakeStore(), now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var err error
	f.plugin, err = NewResourceQuota(ResourceQuotaConfig{Store: f.store, Clock: func() time.Time { return f.now }, ReservationTTL: time.Minute})
	require.NoError(t, err)
	return f
}

func (f *quotaFixture) status(t *testing.T, name string) corev1.ResourceQuotaStatus {
	t.Helper()
	return f.store.get(t, resourceQuotasGR, "team", name).(*corev1.ResourceQuota).Status
}

func TestResourceQuotaPodCount(t *testing.T) {
	tests := []struct {
		name    string
		hard    corev1.ResourceList
		stored  []*corev1.Pod
		message string
		used    corev1.ResourceList
	}{
		{
			name:   "room left",
			hard:   rl("pods", "2"),
			stored: []*corev1.Pod{storedPod("a", corev1.PodRunning)},
			used:   rl("pods", "2"),
		},
		{
			name:    "full",
			hard:    rl("pods", "2"),
			stored:  []*corev1.Pod{storedPod("a", corev1.PodRunning), storedPod("b", corev1.PodPending)},
			message: `pods "web" is forbidden: exceeded quota: pod-quota, requested: pods=1, used: pods=2, limited: pods=2`,
		},
		{
			name:   "finished pods do not count",
			hard:   rl("pods", "2"),
			stored: []*corev1.Pod{storedPod("a", corev1.PodSucceeded), storedPod("b", corev1.PodFailed), storedPod("c", corev1.PodRunning)},
			used:   rl("pods", "2"),
		},
		{
			name:    "count/pods counts finished pods",
			hard:    rl("count/pods", "2"),
			stored:  []*corev1.Pod{storedPod("a", corev1.PodSucceeded), storedPod("b", corev1.PodFailed)},
			message: `pods "web" is forbidden: exceeded quota: pod-quota, requested: count/pods=1, used: count/pods=2, limited: count/pods=2`,
		},
		{
			name:    "zero quota",
			hard:    rl("pods", "0", "configmaps", "5"),
			message: `pods "web" is forbidden: exceeded quota: pod-quota, requested: pods=1, used: pods=0, limited: pods=0`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newQuotaFixture(t)
			f.store.put(t, resourceQuotasGR, quota("pod-quota", tt.hard))
			for _, p := range tt.stored {
				f.store.put(t, podsGR, p)
			}
			err := f.plugin.Validate(context.Background(), createPod("team", newPod("web", ctr("app", nil, nil))))
			if tt.message != "" {
				requireStatus(t, err, http.StatusForbidden, tt.message)
				return
			}
			require.NoError(t, err)
			st := f.status(t, "pod-quota")
			assertQuantities(t, tt.hard, st.Hard)
			assertQuantities(t, tt.used, st.Used)
		})
	}
}

func TestResourceQuotaCompute(t *testing.T) {
	tests := []struct {
		name    string
		hard    corev1.ResourceList
		pod     *corev1.Pod
		message string
		used    corev1.ResourceList
	}{
		{
			name:    "must specify",
			hard:    rl("requests.cpu", "2", "limits.memory", "1Gi"),
			pod:     newPod("web", ctr("app", rl("cpu", "100m"), nil)),
			message: `pods "web" is forbidden: failed quota: compute: must specify limits.memory for: app`,
		},
		{
			name: "must specify, several containers",
			hard: rl("requests.cpu", "2", "limits.memory", "1Gi"),
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{ctr("init", nil, rl("memory", "64Mi"))},
				Containers:     []corev1.Container{ctr("sidecar", nil, nil), ctr("app", nil, nil)},
			}},
			message: `pods "web" is forbidden: failed quota: compute: must specify limits.memory for: app,sidecar; requests.cpu for: app,init,sidecar`,
		},
		{
			name:    "cpu is requests.cpu",
			hard:    rl("cpu", "1"),
			pod:     newPod("web", ctr("app", nil, rl("memory", "1Gi"))),
			message: `pods "web" is forbidden: failed quota: compute: must specify cpu for: app`,
		},
		{
			name:    "exceeded",
			hard:    rl("requests.cpu", "1", "requests.memory", "1Gi"),
			pod:     newPod("web", ctr("app", rl("cpu", "500m", "memory", "128Mi"), nil)),
			message: `pods "web" is forbidden: exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=800m, limited: requests.cpu=1`,
		},
		{
			name: "fits",
			hard: rl("requests.cpu", "2", "requests.memory", "1Gi", "limits.cpu", "4", "cpu", "2", "memory", "1Gi", "pods", "5"),
			pod:  newPod("web", ctr("app", rl("cpu", "500m", "memory", "128Mi"), rl("cpu", "1", "memory", "128Mi"))),
			used: rl("requests.cpu", "1300m", "requests.memory", "384Mi", "limits.cpu", "2", "cpu", "1300m",
				"memory", "384Mi", "pods", "2"),
		},
		{
			name: "pod-level resources state requests for every container",
			hard: rl("requests.cpu", "2"),
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{
				Resources:  &corev1.ResourceRequirements{Requests: rl("cpu", "1")},
				Containers: []corev1.Container{ctr("a", nil, nil), ctr("b", nil, nil)},
			}},
			used: rl("requests.cpu", "1800m"),
		},
		{
			name:    "extended resources",
			hard:    rl("requests.nvidia.com/gpu", "1"),
			pod:     newPod("web", ctr("app", rl("nvidia.com/gpu", "2"), rl("nvidia.com/gpu", "2"))),
			message: `pods "web" is forbidden: exceeded quota: compute, requested: requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=1`,
		},
		{
			name: "ephemeral storage and hugepages",
			hard: rl("requests.ephemeral-storage", "10Gi", "requests.hugepages-2Mi", "1Gi"),
			pod:  newPod("web", ctr("app", rl("ephemeral-storage", "1Gi", "hugepages-2Mi", "128Mi"), rl("hugepages-2Mi", "128Mi"))),
			used: rl("requests.ephemeral-storage", "1Gi", "requests.hugepages-2Mi", "128Mi"),
		},
		{
			name:    "negative usage",
			hard:    rl("requests.cpu", "1"),
			pod:     newPod("web", ctr("app", rl("cpu", "-1"), nil)),
			message: `pods "web" is forbidden: quota usage is negative for resource(s): cpu,requests.cpu`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newQuotaFixture(t)
			f.store.put(t, resourceQuotasGR, quota("compute", tt.hard))
			f.store.put(t, podsGR,
				storedPod("old", corev1.PodRunning, ctr("app", rl("cpu", "800m", "memory", "256Mi"), rl("cpu", "1", "memory", "256Mi"))),
				storedPod("done", corev1.PodSucceeded, ctr("app", rl("cpu", "8", "memory", "8Gi"), rl("cpu", "8", "memory", "8Gi"))),
			)
			err := f.plugin.Validate(context.Background(), createPod("team", tt.pod))
			if tt.message != "" {
				requireStatus(t, err, http.StatusForbidden, tt.message)
				return
			}
			require.NoError(t, err)
			assertQuantities(t, tt.used, f.status(t, "compute").Used)
		})
	}
}

func TestResourceQuotaIgnores(t *testing.T) {
	f := newQuotaFixture(t)
	f.store.put(t, resourceQuotasGR, quota("none", rl("pods", "0", "count/events", "0", "configmaps", "0")))
	ctx := context.Background()
	status := createPod("team", newPod("web"))
	status.Subresource = "status"
	assert.NoError(t, f.plugin.Validate(ctx, status))
	assert.NoError(t, f.plugin.Validate(ctx, attrs(Create, "events", "team", "e", &corev1.Event{}, nil)))
	assert.NoError(t, f.plugin.Validate(ctx, attrs(Create, "namespaces", "", "team", namespace("team", ""), nil)))
	assert.NoError(t, f.plugin.Validate(ctx, attrs(Update, "pods", "team", "web", newPod("web"), newPod("web"))))
	assert.NoError(t, f.plugin.Validate(ctx, attrs(Update, "configmaps", "team", "c", &corev1.ConfigMap{}, &corev1.ConfigMap{})))
	assert.NoError(t, f.plugin.Validate(ctx, createPod("other", newPod("web"))), "quotas are per namespace")
	assert.Zero(t, f.store.updates)

	_, err := NewResourceQuota(ResourceQuotaConfig{})
	assert.Error(t, err)
	_, err = NewResourceQuota(ResourceQuotaConfig{Store: f.store, ReservationTTL: -1})
	assert.Error(t, err)
}

func TestResourceQuotaDryRun(t *testing.T) {
	f := newQuotaFixture(t)
	f.store.put(t, resourceQuotasGR, quota("pods", rl("pods", "1")))
	ctx := context.Background()
	dry := createPod("team", newPod("a"))
	dry.DryRun = true
	require.NoError(t, f.plugin.Validate(ctx, dry))
	assert.Zero(t, f.store.updates, "dry run writes no status")
	assert.Empty(t, f.status(t, "pods").Used)
	require.NoError(t, f.plugin.Validate(ctx, createPod("team", newPod("b"))), "dry run reserved nothing")
	assert.Equal(t, 1, f.store.updates)
}

func TestResourceQuotaReservations(t *testing.T) {
	ctx := context.Background()
	f := newQuotaFixture(t)
	f.store.put(t, resourceQuotasGR, quota("pods", rl("pods", "2")))
	admit := func(name string) (*Attributes, error) {
		req := createPod("team", newPod(name))
		return req, f.plugin.Validate(ctx, req)
	}

	// Admitted pods count before they are stored.
	a, err := admit("a")
	require.NoError(t, err)
	b, err := admit("b")
	require.NoError(t, err)
	_, err = admit("c")
	requireStatus(t, err, http.StatusForbidden,
		`pods "c" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`)

	// Once stored they are counted once, not twice, with or without Finish.
	f.store.put(t, podsGR, storedPod("a", corev1.PodPending), storedPod("b", corev1.PodPending))
	f.plugin.Finish(ctx, b, nil)
	_, err = admit("c")
	require.Error(t, err)
	require.NoError(t, f.plugin.SyncNamespace(ctx, "team"))
	assertQuantities(t, rl("pods", "2"), f.status(t, "pods").Used)

	// b is deleted right after its creation: Finish already released it.
	_, err = f.store.Delete(ctx, storage.Key(podsGR, "team", "b"), nil)
	require.NoError(t, err)
	c, err := admit("c")
	require.NoError(t, err)

	// c's write failed: Finish releases the reservation at once.
	f.plugin.Finish(ctx, c, errors.New("already exists"))
	_, err = admit("d")
	require.NoError(t, err)
	f.plugin.Finish(ctx, a, nil) // a was stored long ago: nothing to release
	_, err = admit("e")
	require.Error(t, err, "d is still reserved")
}

func TestResourceQuotaReservationExpires(t *testing.T) {
	ctx := context.Background()
	f := newQuotaFixture(t)
	f.store.put(t, resourceQuotasGR, quota("pods", rl("pods", "1")))
	require.NoError(t, f.plugin.Validate(ctx, createPod("team", newPod("lost"))))
	require.Error(t, f.plugin.Validate(ctx, createPod("team", newPod("next"))))
	f.now = f.now.Add(2 * time.Minute)
	require.NoError(t, f.plugin.Validate(ctx, createPod("team", newPod("next"))))
}

func TestResourceQuotaReservationOfUpdate(t *testing.T) {
	ctx := context.Background()
	f := newQuotaFixture(t)
	f.store.put(t, resourceQuotasGR, quota("svc", rl("services.nodeports", "2")))
	f.store.put(t, servicesGR,
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "a"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b"}})
	toNodePort := func(name string) *Attributes {
		old := f.store.get(t, servicesGR, "team", name).(*corev1.Service)
		next := old.DeepCopy()
		next.Spec.Type = corev1.ServiceTypeNodePort
		next.Spec.Ports = []corev1.ServicePort{{Port: 80}, {Port: 81}}
		return attrs(Update, "services", "team", name, next, old)
	}
	// a's update is admitted but not written yet; b's must see it.
	require.NoError(t, f.plugin.Validate(ctx, toNodePort("a")))
	requireStatus(t, f.plugin.Validate(ctx, toNodePort("b")), http.StatusForbidden,
		`services "b" is forbidden: exceeded quota: svc, requested: services.nodeports=2, used: services.nodeports=2, limited: services.nodeports=2`)
}

func TestResourceQuotaSyncNamespace(t *testing.T) {
	f := newQuotaFixture(t)
	f.store.put(t, resourceQuotasGR, quota("pods", rl("pods", "5", "requests.cpu", "4")))
	f.store.put(t, podsGR,
		storedPod("a", corev1.PodRunning, ctr("app", rl("cpu", "1"), nil)),
		storedPod("b", corev1.PodRunning, ctr("app", rl("cpu", "500m"), nil)))
	ctx := context.Background()
	require.NoError(t, f.plugin.SyncNamespace(ctx, "team"))
	assertQuantities(t, rl("pods", "2", "requests.cpu", "1500m"), f.status(t, "pods").Used)
	assertQuantities(t, rl("pods", "5", "requests.cpu", "4"), f.status(t, "pods").Hard)

	_, err := f.store.Delete(ctx, storage.Key(podsGR, "team", "a"), nil)
	require.NoError(t, err)
	require.NoError(t, f.plugin.SyncNamespace(ctx, "team"))
	assertQuantities(t, rl("pods", "1", "requests.cpu", "500m"), f.status(t, "pods").Used)

	updates := f.store.updates
	require.NoError(t, f.plugin.SyncNamespace(ctx, "team"))
	assert.Equal(t, updates, f.store.updates, "an unchanged status is not rewritten")

	f.store.failList = errors.New("disk on fire")
	assert.Error(t, f.plugin.SyncNamespace(ctx, "team"))
}

// specChangingStore edits the quota's spec right before the plugin's first
// status write, as a concurrent `kubectl edit quota` would.
type specChangingStore struct {
	*fakeStore
	changed bool
}

func (s *specChangingStore) Update(ctx context.Context, key string, try func(runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	if !s.changed {
		s.changed = true
		if _, err := s.fakeStore.Update(ctx, key, func(cur runtime.Object) (runtime.Object, error) {
			q := cur.(*corev1.ResourceQuota)
			q.Spec.Hard = rl("pods", "1")
			return q, nil
		}); err != nil {
			return nil, err
		}
	}
	return s.fakeStore.Update(ctx, key, try)
}

func TestResourceQuotaRetriesWhenQuotaChanges(t *testing.T) {
	store := &specChangingStore{fakeStore: newFakeStore()}
	store.put(t, resourceQuotasGR, quota("pods", rl("pods", "5")))
	store.put(t, podsGR, storedPod("a", corev1.PodRunning))
	plugin, err := NewResourceQuota(ResourceQuotaConfig{Store: store})
	require.NoError(t, err)
	requireStatus(t, plugin.Validate(context.Background(), createPod("team", newPod("web"))), http.StatusForbidden,
		`pods "web" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1`)
}

func TestResourceQuotaConcurrentCreates(t *testing.T) {
	ctx := context.Background()
	f := newQuotaFixture(t)
	f.store.put(t, resourceQuotasGR, quota("pods", rl("pods", "5")))
	const workers = 24
	reqs := make([]*Attributes, workers)
	errs := make([]error, workers)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range workers {
		done.Add(1)
		go func() {
			defer done.Done()
			reqs[i] = createPod("team", newPod(fmt.Sprintf("p%02d", i), ctr("app", nil, nil)))
			start.Wait()
			errs[i] = f.plugin.Validate(ctx, reqs[i])
		}()
	}
	start.Done()
	done.Wait()

	// Only now does the REST layer store what was admitted: every
	// admission above ran before any of the pods reached storage.
	admitted := 0
	for i, err := range errs {
		if err != nil {
			assert.True(t, apierrors.IsForbidden(err), "unexpected error: %v", err)
			continue
		}
		admitted++
		p := reqs[i].Object.(*corev1.Pod)
		_, werr := f.store.Create(ctx, storage.Key(podsGR, "team", p.Name), p)
		require.NoError(t, werr)
		f.plugin.Finish(ctx, reqs[i], nil)
	}
	assert.Equal(t, 5, admitted)
	require.NoError(t, f.plugin.SyncNamespace(ctx, "team"))
	assertQuantities(t, rl("pods", "5"), f.status(t, "pods").Used)
}
