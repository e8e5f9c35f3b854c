package validation

import (
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLease(t *testing.T) {
	v := Default()
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("node-1"), LeaseDurationSeconds: ptr(int32(40))}}
	expectErrors(t, v.ValidateCreate(l))
	l.Spec.LeaseDurationSeconds = ptr(int32(0))
	l.Spec.LeaseTransitions = ptr(int32(-1))
	expectErrors(t, v.ValidateCreate(l), inv("spec.leaseDurationSeconds", "must be greater than 0"), inv("spec.leaseTransitions", ""))
	old := l.DeepCopy()
	old.ObjectMeta = storedMeta(old.ObjectMeta)
	old.Spec.LeaseDurationSeconds, old.Spec.LeaseTransitions = nil, nil
	upd := old.DeepCopy()
	upd.Spec.RenewTime = ptr(metav1.NowMicro())
	expectErrors(t, v.ValidateUpdate(upd, old))
	upd.Spec.LeaseDurationSeconds = ptr(int32(-5))
	expectErrors(t, v.ValidateUpdate(upd, old), inv("spec.leaseDurationSeconds", "must be greater than 0"))
}

func TestScale(t *testing.T) {
	v := Default()
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "3"}, Spec: autoscalingv1.ScaleSpec{Replicas: 0}}
	expectErrors(t, v.ValidateUpdate(s, s.DeepCopy()))
	s.Spec.Replicas = -1
	expectErrors(t, v.ValidateUpdate(s, s.DeepCopy()), inv("spec.replicas", "must be greater than or equal to 0"))
	expectErrors(t, v.ValidateCreate(s), inv("spec.replicas", "must be greater than or equal to 0"))
}
