package validation

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestCoreEvent(t *testing.T) {
	ev := func(mut func(e *corev1.Event)) *corev1.Event {
		e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.17a2b3c4d5", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "default", Name: "web"},
			Reason:         "Scheduled", Message: "assigned", Type: corev1.EventTypeNormal}
		mut(e)
		return e
	}
	micro := metav1.NewMicroTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	cases := []struct {
		name string
		obj  *corev1.Event
		want []want
	}{
		{"legacy event", ev(func(*corev1.Event) {}), nil},
		{"legacy event long message allowed", ev(func(e *corev1.Event) { e.Message = strings.Repeat("m", 5000); e.Reason = strings.Repeat("r", 300) }), nil},
		{"namespace mismatch", ev(func(e *corev1.Event) { e.InvolvedObject.Namespace = "other" }), []want{inv("involvedObject.namespace", "does not match event.namespace")}},
		{"node event in default", ev(func(e *corev1.Event) {
			e.InvolvedObject = corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: "n1"}
		}), nil},
		{"node event with namespace", ev(func(e *corev1.Event) {
			e.InvolvedObject = corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: "n1", Namespace: "default"}
		}), []want{inv("involvedObject.namespace", "not allowed for kind Node")}},
		{"pod event without namespace", ev(func(e *corev1.Event) { e.InvolvedObject.Namespace = "" }),
			[]want{req("involvedObject.namespace")}},
		{"new-style needs reporting fields", ev(func(e *corev1.Event) { e.EventTime = micro }),
			[]want{req("reportingComponent"), req("reportingInstance"), req("action")}},
		{"new-style limits", ev(func(e *corev1.Event) {
			e.EventTime, e.ReportingController, e.ReportingInstance, e.Action = micro, "podkit.io/scheduler", "host-1", "Binding"
			e.Message = strings.Repeat("m", 1025)
		}), []want{inv("message", "at most 1024")}},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, v.ValidateCreate(tc.obj), tc.want...) })
	}
}

func TestEventsV1Event(t *testing.T) {
	micro := metav1.NewMicroTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	good := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: "default"}, EventTime: micro,
		ReportingController: "podkit.io/kubelet", ReportingInstance: "node-1", Action: "Pulling", Reason: "Pulling", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "default"}, Note: "pulling image"}
	v := Default()
	expectErrors(t, v.ValidateCreate(good))
	expectErrors(t, v.ValidateCreate(&eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default"}, Type: "Info"}),
		req("eventTime"), inv("type", "has invalid value: Info"), req("reportingController"),
		req("reportingInstance"), req("action"), req("reason"))
	old := good.DeepCopy()
	old.ObjectMeta = storedMeta(old.ObjectMeta)
	upd := old.DeepCopy()
	upd.Note = "changed"
	upd.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: micro}
	expectErrors(t, v.ValidateUpdate(upd, old), inv("note", "field is immutable"))
}

func TestEventScopeFromOption(t *testing.T) {
	v, err := New(WithScope(func(gk schema.GroupKind) (bool, bool) {
		return false, gk == schema.GroupKind{Group: "example.com", Kind: "Cluster"}
	}))
	if err != nil {
		t.Fatal(err)
	}
	e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "c.1", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{APIVersion: "example.com/v1", Kind: "Cluster", Name: "c", Namespace: "default"}}
	expectErrors(t, v.ValidateCreate(e), inv("involvedObject.namespace", "not allowed for kind Cluster"))
	expectErrors(t, Default().ValidateCreate(e))
}
