package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLimitRange(t *testing.T) {
	q := resource.MustParse
	lr := func(items ...corev1.LimitRangeItem) *corev1.LimitRange {
		return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "default"}, Spec: corev1.LimitRangeSpec{Limits: items}}
	}
	rl := func(cpu string) corev1.ResourceList { return corev1.ResourceList{corev1.ResourceCPU: q(cpu)} }
	cases := []struct {
		name string
		obj  *corev1.LimitRange
		want []want
	}{
		{"valid container", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("100m"), DefaultRequest: rl("200m"), Default: rl("500m"), Max: rl("1"),
			MaxLimitRequestRatio: rl("4")}), nil},
		{"valid pvc", lr(corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Max: corev1.ResourceList{corev1.ResourceStorage: q("10Gi")}}), nil},
		{"unknown type", lr(corev1.LimitRangeItem{Type: "Node"}), []want{inv("spec.limits[0].type", "standard limit type")}},
		{"duplicate type", lr(corev1.LimitRangeItem{Type: corev1.LimitTypePod}, corev1.LimitRangeItem{Type: corev1.LimitTypePod}), []want{dup("spec.limits[1].type")}},
		{"min above max", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("2"), Max: rl("1")}),
			[]want{inv("spec.limits[0].min[cpu]", "min value 2 is greater than max value 1")}},
		{"defaultRequest above default", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, DefaultRequest: rl("2"), Default: rl("1")}),
			[]want{inv("spec.limits[0].defaultRequest[cpu]", "default request value 2 is greater than default limit value 1")}},
		{"default above max", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("2"), Max: rl("1")}),
			[]want{inv("spec.limits[0].default[cpu]", "default value 2 is greater than max value 1")}},
		{"min above defaultRequest", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("2"), DefaultRequest: rl("1")}),
			[]want{inv("spec.limits[0].defaultRequest[cpu]", "min value 2 is greater than default request value 1")}},
		{"ratio below one", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: rl("500m")}),
			[]want{inv("spec.limits[0].maxLimitRequestRatio[cpu]", "ratio 500m is less than 1")}},
		{"ratio above max/min", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("1"), Max: rl("2"), MaxLimitRequestRatio: rl("3")}),
			[]want{inv("spec.limits[0].maxLimitRequestRatio[cpu]", "is greater than max/min")}},
		{"pod defaults forbidden", lr(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Default: rl("1")}),
			[]want{forb("spec.limits[0].default", "may not be specified when `type` is 'Pod'")}},
		{"pvc needs storage bound", lr(corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim}),
			[]want{req("spec.limits[0].limits")}},
		{"bad resource for container", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"pods": q("1")}}),
			[]want{inv("spec.limits[0].max[pods]", "standard resource for containers")}},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, v.ValidateCreate(tc.obj), tc.want...) })
	}
}

func TestResourceQuota(t *testing.T) {
	q := resource.MustParse
	rq := func(spec corev1.ResourceQuotaSpec) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: "default"}, Spec: spec}
	}
	cases := []struct {
		name string
		obj  *corev1.ResourceQuota
		want []want
	}{
		{"valid", rq(corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": q("10"), "requests.cpu": q("4"), "count/deployments.apps": q("5"),
			"requests.example.com/gpu": q("2")}}), nil},
		{"negative", rq(corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": q("-1")}}), []want{inv("spec.hard[pods]", "greater than or equal to 0")}},
		{"fractional pods", rq(corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": q("1500m")}}), []want{inv("spec.hard[pods]", "must be an integer")}},
		{"non-standard name", rq(corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"widgets": q("1")}}), []want{
			inv("spec.hard[widgets]", "standard resource type or fully qualified"), inv("spec.hard[widgets]", "standard resource for quota")}},
		{"scopes ok", rq(corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": q("1")}, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}}), nil},
		{"unknown scope", rq(corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{"Weekend"}}), []want{inv("spec.scopes", "unsupported scope")}},
		{"scope not for resource", rq(corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.cpu": q("1")}, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}}),
			[]want{inv("spec.scopes", "unsupported scope applied to resource")}},
		{"conflicting scopes", rq(corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating}}),
			[]want{inv("spec.scopes", "conflicting scopes")}},
		{"scope selector operator", rq(corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn}}}}),
			[]want{req("spec.scopeSelector.matchExpressions.values")}},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, v.ValidateCreate(tc.obj), tc.want...) })
	}
	old := rq(corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}})
	old.ObjectMeta = storedMeta(old.ObjectMeta)
	upd := old.DeepCopy()
	upd.Spec.Scopes = nil
	expectErrors(t, v.ValidateUpdate(upd, old), inv("spec.scopes", "field is immutable"))
	st := old.DeepCopy()
	st.Status.Used = corev1.ResourceList{"pods": q("-2")}
	expectErrors(t, v.ValidateStatusUpdate(st, old), inv("status.used[pods]", ""))
}
