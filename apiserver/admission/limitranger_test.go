package admission

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func limitRange(ns, name string, items ...corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

func limitRanger(t *testing.T, ranges ...*corev1.LimitRange) (*LimitRanger, *fakeStore) {
	t.Helper()
	store := newFakeStore()
	for _, lr := range ranges {
		store.put(t, limitRangesGR, lr)
	}
	plugin, err := NewLimitRanger(LimitRangerConfig{LimitRanges: store})
	require.NoError(t, err)
	return plugin, store
}

func TestLimitRangerDefaults(t *testing.T) {
	plugin, _ := limitRanger(t, limitRange("team", "defaults", corev1.LimitRangeItem{
		Type:           corev1.LimitTypeContainer,
		Default:        rl("cpu", "500m", "memory", "256Mi"),
		DefaultRequest: rl("cpu", "100m", "memory", "128Mi"),
	}))
	p := newPod("web",
		ctr("app", nil, nil),
		ctr("sidecar", rl("cpu", "50m"), rl("memory", "64Mi")),
	)
	p.Spec.InitContainers = []corev1.Container{ctr("init", nil, rl("cpu", "1", "memory", "1Gi"))}
	req := createPod("team", p)
	require.NoError(t, plugin.Admit(context.Background(), req))

	assertQuantities(t, rl("cpu", "100m", "memory", "128Mi"), p.Spec.Containers[0].Resources.Requests)
	assertQuantities(t, rl("cpu", "500m", "memory", "256Mi"), p.Spec.Containers[0].Resources.Limits)
	assertQuantities(t, rl("cpu", "50m", "memory", "128Mi"), p.Spec.Containers[1].Resources.Requests)
	assertQuantities(t, rl("cpu", "500m", "memory", "64Mi"), p.Spec.Containers[1].Resources.Limits)
	assertQuantities(t, rl("cpu", "100m", "memory", "128Mi"), p.Spec.InitContainers[0].Resources.Requests)
	assertQuantities(t, rl("cpu", "1", "memory", "1Gi"), p.Spec.InitContainers[0].Resources.Limits)
	assert.Equal(t, "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; "+
		"memory request for container sidecar; cpu limit for container sidecar; "+
		"cpu, memory request for init container init",
		p.Annotations[LimitRangerAnnotation])
	assert.NoError(t, plugin.Validate(context.Background(), req))
}

func TestLimitRangerDefaultsFromMax(t *testing.T) {
	// A stored range that only states max: defaulting it makes max the
	// default limit and request, as the API server would have on create.
	plugin, _ := limitRanger(t, limitRange("team", "max", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("cpu", "1")}))
	p := newPod("web", ctr("app", nil, nil))
	require.NoError(t, plugin.Admit(context.Background(), createPod("team", p)))
	assertQuantities(t, rl("cpu", "1"), p.Spec.Containers[0].Resources.Limits)
	assertQuantities(t, rl("cpu", "1"), p.Spec.Containers[0].Resources.Requests)
}

func TestLimitRangerNoAnnotationWithoutDefaults(t *testing.T) {
	plugin, _ := limitRanger(t, limitRange("team", "pods", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "4")}))
	p := newPod("web", ctr("app", rl("cpu", "1"), rl("cpu", "1")))
	require.NoError(t, plugin.Admit(context.Background(), createPod("team", p)))
	assert.Nil(t, p.Annotations)
}

func TestLimitRangerValidate(t *testing.T) {
	container := func(items ...corev1.LimitRangeItem) *corev1.LimitRange { return limitRange("team", "limits", items...) }
	tests := []struct {
		name    string
		lr      *corev1.LimitRange
		pod     *corev1.Pod
		message string
	}{
		{
			name: "within bounds",
			lr:   container(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("cpu", "1"), Min: rl("cpu", "100m")}),
			pod:  newPod("web", ctr("app", rl("cpu", "200m"), rl("cpu", "1"))),
		},
		{
			name:    "limit above max",
			lr:      container(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("cpu", "1")}),
			pod:     newPod("web", ctr("app", rl("cpu", "500m"), rl("cpu", "2"))),
			message: `pods "web" is forbidden: maximum cpu usage per Container is 1, but limit is 2`,
		},
		{
			name:    "request above max",
			lr:      container(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("memory", "1Gi")}),
			pod:     newPod("web", ctr("app", rl("memory", "2Gi"), rl("memory", "1Gi"))),
			message: `pods "web" is forbidden: maximum memory usage per Container is 1Gi, but request is 2Gi`,
		},
		{
			name:    "no limit under max",
			lr:      container(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("cpu", "1")}),
			pod:     &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}},
			message: `pods "web" is forbidden: maximum cpu usage per Container is 1.  No limit is specified`,
		},
		{
			name:    "request below min",
			lr:      container(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("memory", "64Mi")}),
			pod:     newPod("web", ctr("app", rl("memory", "32Mi"), nil)),
			message: `pods "web" is forbidden: minimum memory usage per Container is 64Mi, but request is 32Mi`,
		},
		{
			name:    "init container checked too",
			lr:      container(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("memory", "64Mi")}),
			pod:     &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{InitContainers: []corev1.Container{ctr("init", rl("memory", "1Mi"), nil)}}},
			message: `pods "web" is forbidden: minimum memory usage per Container is 64Mi, but request is 1Mi`,
		},
		{
			name:    "ratio exceeded",
			lr:      container(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: rl("cpu", "2")}),
			pod:     newPod("web", ctr("app", rl("cpu", "250m"), rl("cpu", "1"))),
			message: `pods "web" is forbidden: cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000`,
		},
		{
			name:    "ratio without request",
			lr:      container(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: rl("cpu", "2")}),
			pod:     newPod("web", ctr("app", nil, rl("cpu", "1"))),
			message: `pods "web" is forbidden: cpu max limit to request ratio per Container is 2, but no request is specified or request is 0`,
		},
		{
			name: "several violations are listed together",
			lr: container(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
				Max: rl("cpu", "1", "memory", "1Gi")}),
			pod:     newPod("web", ctr("app", rl("cpu", "1", "memory", "1Gi"), rl("cpu", "2", "memory", "2Gi"))),
			message: `pods "web" is forbidden: [maximum cpu usage per Container is 1, but limit is 2, maximum memory usage per Container is 1Gi, but limit is 2Gi]`,
		},
		{
			name: "pod total above max",
			lr:   container(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "1")}),
			pod: newPod("web",
				ctr("a", rl("cpu", "500m"), rl("cpu", "750m")),
				ctr("b", rl("cpu", "500m"), rl("cpu", "750m"))),
			message: `pods "web" is forbidden: maximum cpu usage per Pod is 1, but limit is 1500m`,
		},
		{
			name: "pod total below min",
			lr:   container(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: rl("memory", "1Gi")}),
			pod: newPod("web",
				ctr("a", rl("memory", "256Mi"), nil),
				ctr("b", rl("memory", "256Mi"), nil)),
			message: `pods "web" is forbidden: minimum memory usage per Pod is 1Gi, but request is 512Mi`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plugin, _ := limitRanger(t, tt.lr)
			err := plugin.Validate(context.Background(), createPod("team", tt.pod))
			if tt.message == "" {
				assert.NoError(t, err)
				return
			}
			requireStatus(t, err, http.StatusForbidden, tt.message)
		})
	}
}

func TestLimitRangerClaims(t *testing.T) {
	plugin, _ := limitRanger(t, limitRange("team", "storage", corev1.LimitRangeItem{
		Type: corev1.LimitTypePersistentVolumeClaim, Min: rl("storage", "1Gi"), Max: rl("storage", "10Gi"),
	}))
	claim := func(size string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "team"}}
		if size != "" {
			c.Spec.Resources.Requests = rl("storage", size)
		}
		return c
	}
	ctx := context.Background()
	assert.NoError(t, plugin.Validate(ctx, attrs(Create, "persistentvolumeclaims", "team", "data", claim("5Gi"), nil)))
	requireStatus(t, plugin.Validate(ctx, attrs(Create, "persistentvolumeclaims", "team", "data", claim("20Gi"), nil)), http.StatusForbidden,
		`persistentvolumeclaims "data" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi`)
	requireStatus(t, plugin.Validate(ctx, attrs(Update, "persistentvolumeclaims", "team", "data", claim("500Mi"), claim("5Gi"))), http.StatusForbidden,
		`persistentvolumeclaims "data" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi`)
	requireStatus(t, plugin.Validate(ctx, attrs(Create, "persistentvolumeclaims", "team", "data", claim(""), nil)), http.StatusForbidden,
		`persistentvolumeclaims "data" is forbidden: [minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified, maximum storage usage per PersistentVolumeClaim is 10Gi.  No request is specified]`)
}

func TestLimitRangerSkips(t *testing.T) {
	plugin, store := limitRanger(t, limitRange("team", "max", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("cpu", "1")}))
	ctx := context.Background()
	big := func() *corev1.Pod { return newPod("web", ctr("app", rl("cpu", "4"), rl("cpu", "4"))) }

	assert.NoError(t, plugin.Validate(ctx, attrs(Update, "pods", "team", "web", big(), big())), "pod updates cannot change containers")
	status := createPod("team", big())
	status.Subresource = "status"
	assert.NoError(t, plugin.Validate(ctx, status))
	assert.NoError(t, plugin.Validate(ctx, createPod("other", big())), "ranges are per namespace")

	resize := attrs(Update, "pods", "team", "web", big(), big())
	resize.Subresource = "resize"
	assert.Error(t, plugin.Validate(ctx, resize), "resizes are checked")

	dying := big()
	dying.DeletionTimestamp = &metav1.Time{}
	resize.OldObject = dying
	assert.NoError(t, plugin.Validate(ctx, resize), "pods being deleted are not checked")

	store.failList = errors.New("disk on fire")
	requireStatus(t, plugin.Validate(ctx, createPod("team", big())), http.StatusForbidden,
		`pods "web" is forbidden: unable to CREATE /v1, Resource=pods at this time because there was an error enforcing limit ranges`)

	_, err := NewLimitRanger(LimitRangerConfig{})
	assert.Error(t, err)
}
