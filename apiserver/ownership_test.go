package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

// readShared reads every field of the objects under keys, and of every
// event of a watch on the whole store, until stop is closed: run with
// -race, a write path that modifies a stored object is a data race.
func readShared(t *testing.T, st storage.Store, keys []string, stop <-chan struct{}) *sync.WaitGroup {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := st.Watch(ctx, "/", storage.WatchOptions{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer cancel()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, k := range keys {
				if obj, err := st.(storage.SharedReader).GetShared(ctx, k); err == nil {
					_, _ = json.Marshal(obj)
				}
			}
		}
	}()
	go func() {
		defer wg.Done()
		for ev := range w.ResultChan() {
			_, _ = json.Marshal(ev.Object)
		}
	}()
	return &wg
}

// TestWritesLeaveEarlierRevisionsAlone keeps the store's object of each
// revision, as a watcher or an earlier read holds it, and checks that no
// write through the handler (binding, status PUT, PUT, the patch types,
// apply, no-op and dry-run writes, scale, a Service update) changes it,
// while concurrent readers go through every stored object.
func TestWritesLeaveEarlierRevisionsAlone(t *testing.T) {
	st := memory.New()
	defer st.Close()
	s := newOwnershipServer(t, st, nil)
	h := s.Handler()
	svcKey := storage.Key(schema.GroupResource{Resource: "services"}, "default", "shop")
	depKey := storage.Key(schema.GroupResource{Group: "apps", Resource: "deployments"}, "default", "shop")
	stop := make(chan struct{})
	readers := readShared(t, st, []string{podKey("p"), svcKey, depKey}, stop)
	defer func() { close(stop); _ = st.Close(); readers.Wait() }()

	mustCall(t, h, http.MethodPost, podsPath, "application/json", asJSON(t, ownershipPod("p"), "v1", "Pod"), http.StatusCreated)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "shop"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "shop"}},
			Spec: ownershipPod("t").Spec}}}
	mustCall(t, h, http.MethodPost, "/apis/apps/v1/namespaces/default/deployments", "application/json", asJSON(t, dep, "apps/v1", "Deployment"), http.StatusCreated)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"app": "shop"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "shop"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	mustCall(t, h, http.MethodPost, "/api/v1/namespaces/default/services", "application/json", asJSON(t, svc, "v1", "Service"), http.StatusCreated)

	// podJSON is the stored pod as a client would send it back, changed.
	podJSON := func(change func(p *corev1.Pod)) []byte {
		p := sharedPod(t, st, "p").DeepCopy()
		change(p)
		return asJSON(t, p, "v1", "Pod")
	}
	const (
		podPath = podsPath + "/p"
		depPath = "/apis/apps/v1/namespaces/default/deployments/shop"
		merge   = "application/merge-patch+json"
	)
	steps := []struct {
		name  string
		key   string
		write func() (method, path, contentType string, body []byte, code int)
		noop  bool // the write changes nothing: the stored object stays
		check func(t *testing.T, old, cur runtime.Object)
	}{
		{"dry-run binding", podKey("p"), func() (string, string, string, []byte, int) {
			return http.MethodPost, podPath + "/binding?dryRun=All", "application/json",
				[]byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"},"target":{"name":"node-0"}}`), http.StatusCreated
		}, true, nil},
		{"binding", podKey("p"), func() (string, string, string, []byte, int) {
			return http.MethodPost, podPath + "/binding", "application/json",
				[]byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p","annotations":{"example.com/bound":"yes"}},"target":{"name":"node-1"}}`), http.StatusCreated
		}, false, func(t *testing.T, _, cur runtime.Object) {
			p := cur.(*corev1.Pod)
			assert.Equal(t, "node-1", p.Spec.NodeName)
			assert.Equal(t, map[string]string{"example.com/owner": "team-a", "example.com/bound": "yes"}, p.Annotations)
			require.Len(t, p.Status.Conditions, 1)
			assert.Equal(t, corev1.PodScheduled, p.Status.Conditions[0].Type)
			assert.Equal(t, corev1.ConditionTrue, p.Status.Conditions[0].Status)
		}},
		{"status PUT", podKey("p"), func() (string, string, string, []byte, int) {
			return http.MethodPut, podPath + "/status", "application/json", podJSON(func(p *corev1.Pod) {
				p.ResourceVersion = ""
				p.Status.Phase, p.Status.PodIP = corev1.PodRunning, "10.244.1.7"
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
				p.Labels["ignored"] = "through status"
				p.Spec.Containers[0].Image = "ignored:through-status"
			}), http.StatusOK
		}, false, func(t *testing.T, old, cur runtime.Object) {
			p, o := cur.(*corev1.Pod), old.(*corev1.Pod)
			assert.Equal(t, corev1.PodRunning, p.Status.Phase)
			assert.Len(t, p.Status.Conditions, 2)
			assert.Equal(t, o.Spec, p.Spec, "status PUT keeps the stored spec")
			assert.Equal(t, o.Labels, p.Labels, "status PUT keeps the stored metadata")
		}},
		{"no-op PUT", podKey("p"), func() (string, string, string, []byte, int) {
			return http.MethodPut, podPath, "application/json", podJSON(func(*corev1.Pod) {}), http.StatusOK
		}, true, nil},
		{"dry-run PUT", podKey("p"), func() (string, string, string, []byte, int) {
			return http.MethodPut, podPath + "?dryRun=All", "application/json",
				podJSON(func(p *corev1.Pod) { p.Labels["dry"] = "run" }), http.StatusOK
		}, true, nil},
		{"PUT", podKey("p"), func() (string, string, string, []byte, int) {
			return http.MethodPut, podPath, "application/json", podJSON(func(p *corev1.Pod) {
				p.ResourceVersion = ""
				p.Labels["tier"] = "front"
				p.Status.Phase = corev1.PodFailed // kept from the stored object
			}), http.StatusOK
		}, false, func(t *testing.T, old, cur runtime.Object) {
			assert.Equal(t, "front", cur.(*corev1.Pod).Labels["tier"])
			assert.Equal(t, old.(*corev1.Pod).Status, cur.(*corev1.Pod).Status)
		}},
		{"merge PATCH", podKey("p"), func() (string, string, string, []byte, int) {
			return http.MethodPatch, podPath, merge, []byte(`{"metadata":{"labels":{"tier":"back"}}}`), http.StatusOK
		}, false, func(t *testing.T, _, cur runtime.Object) { assert.Equal(t, "back", cur.(*corev1.Pod).Labels["tier"]) }},
		{"strategic status PATCH", podKey("p"), func() (string, string, string, []byte, int) {
			return http.MethodPatch, podPath + "/status", "application/strategic-merge-patch+json",
				[]byte(`{"status":{"conditions":[{"type":"Ready","status":"False"}]}}`), http.StatusOK
		}, false, nil},
		{"JSON PATCH", podKey("p"), func() (string, string, string, []byte, int) {
			return http.MethodPatch, podPath, "application/json-patch+json",
				[]byte(`[{"op":"add","path":"/metadata/annotations/example.com~1patched","value":"json"}]`), http.StatusOK
		}, false, nil},
		{"apply", podKey("p"), func() (string, string, string, []byte, int) {
			return http.MethodPatch, podPath + "?fieldManager=tester", "application/apply-patch+yaml",
				[]byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels:\n    applied: \"yes\"\n"), http.StatusOK
		}, false, func(t *testing.T, _, cur runtime.Object) { assert.Equal(t, "yes", cur.(*corev1.Pod).Labels["applied"]) }},
		{"scale PUT", depKey, func() (string, string, string, []byte, int) {
			return http.MethodPut, depPath + "/scale", "application/json",
				[]byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"shop","namespace":"default"},"spec":{"replicas":3}}`), http.StatusOK
		}, false, func(t *testing.T, _, cur runtime.Object) {
			assert.Equal(t, int32(3), *cur.(*appsv1.Deployment).Spec.Replicas)
		}},
		{"scale PATCH", depKey, func() (string, string, string, []byte, int) {
			return http.MethodPatch, depPath + "/scale", merge, []byte(`{"spec":{"replicas":5}}`), http.StatusOK
		}, false, nil},
		{"Deployment PATCH", depKey, func() (string, string, string, []byte, int) {
			return http.MethodPatch, depPath, merge, []byte(`{"spec":{"template":{"metadata":{"labels":{"rev":"2"}}}}}`), http.StatusOK
		}, false, nil},
		{"Service PUT keeping its cluster IP", svcKey, func() (string, string, string, []byte, int) {
			obj, err := st.GetShared(context.Background(), svcKey)
			require.NoError(t, err)
			svc := obj.(*corev1.Service).DeepCopy()
			svc.ResourceVersion, svc.Spec.ClusterIP, svc.Spec.ClusterIPs, svc.Spec.IPFamilies = "", "", nil, nil
			svc.Labels["tier"] = "front"
			return http.MethodPut, "/api/v1/namespaces/default/services/shop", "application/json", asJSON(t, svc, "v1", "Service"), http.StatusOK
		}, false, func(t *testing.T, old, cur runtime.Object) {
			assert.Equal(t, old.(*corev1.Service).Spec.ClusterIPs, cur.(*corev1.Service).Spec.ClusterIPs)
			assert.Equal(t, old.(*corev1.Service).Spec.IPFamilies, cur.(*corev1.Service).Spec.IPFamilies)
		}},
	}
	get := func(key string) runtime.Object {
		obj, err := st.GetShared(context.Background(), key)
		require.NoError(t, err)
		return obj
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			old := get(step.key)
			snapshot := old.DeepCopyObject()
			method, path, contentType, body, code := step.write()
			mustCall(t, h, method, path, contentType, body, code)
			cur := get(step.key)
			if step.noop {
				assert.Same(t, old, cur, "nothing is written")
			} else {
				assert.NotSame(t, old, cur, "a new revision is stored")
			}
			assert.Equal(t, snapshot, old, "the earlier revision's object must not change")
			if step.check != nil {
				step.check(t, old, cur)
			}
		})
	}
}

// TestPutRetryStartsFromTheClientObject: a PUT whose store write loses to
// a concurrent writer runs again on the newer object from the object the
// client sent, not from the first attempt's (changed by admission and
// handed to the store); the object admission admitted last is the one
// stored.
func TestPutRetryStartsFromTheClientObject(t *testing.T) {
	st := memory.New()
	defer st.Close()
	hook := &hookAdmission{}
	s := newOwnershipServer(t, st, hook)
	h := s.Handler()
	mustCall(t, h, http.MethodPost, podsPath, "application/json", asJSON(t, ownershipPod("p"), "v1", "Pod"), http.StatusCreated)

	var seen []*corev1.Pod
	var olds []string
	hook.set(func(a *admission.Attributes) error {
		if a.Operation != admission.Update {
			return nil
		}
		p := a.Object.(*corev1.Pod)
		seen = append(seen, p)
		olds = append(olds, a.OldObject.(*corev1.Pod).Labels["other"])
		assert.NotContains(t, p.Labels, "admitted", "attempt %d must start from the client's object", len(seen))
		if len(seen) == 1 {
			// Another writer lands between this attempt's read and write.
			_, err := st.Update(context.Background(), podKey("p"), func(cur runtime.Object) (runtime.Object, error) {
				cur.(*corev1.Pod).Labels["other"] = "won"
				return cur, nil
			})
			require.NoError(t, err)
		}
		p.Labels["admitted"] = strings.Repeat("x", len(seen))
		return nil
	})
	body := asJSON(t, ownershipPod("p"), "v1", "Pod") // no resourceVersion: unconditional
	mustCall(t, h, http.MethodPut, podsPath+"/p", "application/json", body, http.StatusOK)
	hook.set(nil)

	require.Len(t, seen, 2, "the write is retried once")
	assert.Equal(t, []string{"", "won"}, olds, "the retry runs on the newer object")
	assert.NotSame(t, seen[0], seen[1], "the retry decodes the body again")
	stored := sharedPod(t, st, "p")
	assert.Same(t, seen[1], stored, "the admitted object itself is stored")
	assert.Equal(t, "xx", stored.Labels["admitted"])
	assert.NotContains(t, stored.Labels, "other", "a PUT replaces the labels with the client's")
}

// TestGenerateNameRetryGetsAFreshObject: when a generated name is taken,
// the next name goes with a fresh decoding of the client's object, and
// admission runs again on it; the warnings of the body are sent once.
func TestGenerateNameRetryGetsAFreshObject(t *testing.T) {
	st := memory.New()
	defer st.Close()
	hook := &hookAdmission{}
	s := newOwnershipServer(t, st, hook)
	h := s.Handler()

	var seen []*corev1.Pod
	hook.set(func(a *admission.Attributes) error {
		p, ok := a.Object.(*corev1.Pod)
		if !ok || a.Operation != admission.Create {
			return nil
		}
		seen = append(seen, p)
		assert.NotContains(t, p.Labels, "admitted", "attempt %d must start from the client's object", len(seen))
		if len(seen) == 1 {
			// Someone else takes the generated name first.
			taken := ownershipPod(p.Name)
			_, err := st.Create(context.Background(), podKey(p.Name), taken)
			require.NoError(t, err)
		}
		p.Labels["admitted"] = strings.Repeat("x", len(seen))
		return nil
	})
	pod := ownershipPod("")
	pod.GenerateName = "shop-"
	body := asJSON(t, pod, "v1", "Pod")
	body = append(body[:len(body)-1], []byte(`,"unknownField":1}`)...) // one warning
	rec := mustCall(t, h, http.MethodPost, podsPath, "application/json", body, http.StatusCreated)
	hook.set(nil)

	require.Len(t, seen, 2, "the create is retried once, with another name")
	assert.NotSame(t, seen[0], seen[1])
	assert.NotEqual(t, seen[0].Name, seen[1].Name)
	assert.True(t, strings.HasPrefix(seen[1].Name, "shop-"))
	stored := sharedPod(t, st, seen[1].Name)
	assert.Same(t, seen[1], stored, "the admitted object itself is stored")
	assert.Equal(t, "xx", stored.Labels["admitted"])
	assert.Len(t, rec.Header().Values("Warning"), 1, "the retry's decoding adds no warnings")
	var got corev1.Pod
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	assert.Equal(t, seen[1].Name, got.Name)
}

// TestWritesStoreTheAdmittedObject: a create and a status PUT store the
// very object admission saw, with no copy in between.
func TestWritesStoreTheAdmittedObject(t *testing.T) {
	st := memory.New()
	defer st.Close()
	hook := &hookAdmission{}
	s := newOwnershipServer(t, st, hook)
	h := s.Handler()
	var last runtime.Object
	hook.set(func(a *admission.Attributes) error {
		if _, ok := a.Object.(*corev1.Pod); ok {
			last = a.Object
		}
		return nil
	})
	mustCall(t, h, http.MethodPost, podsPath, "application/json", asJSON(t, ownershipPod("p"), "v1", "Pod"), http.StatusCreated)
	assert.Same(t, last, sharedPod(t, st, "p"), "create")

	p := sharedPod(t, st, "p").DeepCopy()
	p.ResourceVersion, p.Status.Phase = "", corev1.PodRunning
	mustCall(t, h, http.MethodPut, podsPath+"/p/status", "application/json", asJSON(t, p, "v1", "Pod"), http.StatusOK)
	assert.Same(t, last, sharedPod(t, st, "p"), "status PUT")
	assert.Equal(t, corev1.PodRunning, sharedPod(t, st, "p").Status.Phase)
}

// TestBindPodCopiesOnWrite: bindPod changes a copy, sharing with the
// stored pod only what it leaves as it is.
func TestBindPodCopiesOnWrite(t *testing.T) {
	for _, tc := range []struct {
		name        string
		conditions  []corev1.PodCondition
		annotations map[string]string
	}{
		{"bare", nil, nil},
		{"with conditions and annotations", []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}, map[string]string{"a": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := ownershipPod("p")
			pod.Status.Conditions, pod.Annotations = tc.conditions, tc.annotations
			snapshot := pod.DeepCopy()
			now := metav1.Now()
			b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"b": "2"}}, Target: corev1.ObjectReference{Name: "node-1"}}
			bound := bindPod(pod, b, now)
			assert.Equal(t, snapshot, pod, "the pod bound must not change")
			assert.Equal(t, "node-1", bound.Spec.NodeName)
			assert.Equal(t, "2", bound.Annotations["b"])
			for k, v := range tc.annotations {
				assert.Equal(t, v, bound.Annotations[k])
			}
			last := bound.Status.Conditions[len(bound.Status.Conditions)-1]
			if len(tc.conditions) > 0 {
				assert.Len(t, bound.Status.Conditions, len(tc.conditions), "PodScheduled is replaced")
				last = bound.Status.Conditions[1]
			}
			assert.Equal(t, corev1.PodScheduled, last.Type)
			assert.Equal(t, corev1.ConditionTrue, last.Status)
			assert.Equal(t, now, last.LastTransitionTime)
		})
	}
}
