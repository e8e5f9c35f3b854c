package printers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCoreEventCells(t *testing.T) {
	micro := func(d time.Duration) metav1.MicroTime { return metav1.NewMicroTime(testNow.Add(-d)) }
	podRef := corev1.ObjectReference{Kind: "Pod", Name: "web-1", FieldPath: "spec.containers{app}"}
	tests := []struct {
		name  string
		event corev1.Event
		want  []any
	}{
		{"classic event", corev1.Event{
			InvolvedObject: podRef, Type: "Normal", Reason: "Pulled", Message: "  Successfully pulled image\n",
			Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
			FirstTimestamp: ago(10 * time.Minute), LastTimestamp: ago(30 * time.Second), Count: 4,
		}, []any{"30s", "Normal", "Pulled", "pod/web-1", "spec.containers{app}", "kubelet, node-1", "Successfully pulled image", "10m", int64(4), "ev"}},
		{"new-style singleton", corev1.Event{
			InvolvedObject: corev1.ObjectReference{Kind: "Node"}, Type: "Warning", Reason: "Rebooted", Message: "rebooted",
			EventTime: micro(5 * time.Hour), ReportingController: "podkit/kubelet", ReportingInstance: "node-1",
		}, []any{"5h", "Warning", "Rebooted", "node", "", "podkit/kubelet, node-1", "rebooted", "5h", int64(1), "ev"}},
		{"series", corev1.Event{
			InvolvedObject: podRef, Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container",
			EventTime: micro(time.Hour), Series: &corev1.EventSeries{Count: 12, LastObservedTime: micro(5 * time.Second)},
			ReportingController: "kubelet",
		}, []any{"5s", "Warning", "BackOff", "pod/web-1", "spec.containers{app}", "kubelet", "Back-off restarting failed container", "60m", int64(12), "ev"}},
		{"last timestamp missing", corev1.Event{
			InvolvedObject: podRef, Type: "Normal", Reason: "Scheduled", FirstTimestamp: ago(3 * time.Minute),
			Source: corev1.EventSource{Component: "default-scheduler"},
		}, []any{"3m", "Normal", "Scheduled", "pod/web-1", "spec.containers{app}", "default-scheduler", "", "3m", int64(1), "ev"}},
		{"no time at all", corev1.Event{InvolvedObject: podRef}, []any{"<unknown>", "", "", "pod/web-1", "spec.containers{app}", "", "", "<unknown>", int64(1), "ev"}},
	}
	p := newTestPrinter(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.event
			e.ObjectMeta = objMeta("ev", time.Hour)
			assert.Equal(t, tt.want, cellsOf(t, p, &e))
		})
	}
	assert.Equal(t,
		[]string{"Last Seen", "Type", "Reason", "Object", "+Subobject", "+Source", "Message", "+First Seen", "+Count", "+Name"},
		columnNames(p.ColumnDefinitions(&corev1.Event{})))
}

func TestEventsV1EventCells(t *testing.T) {
	p := newTestPrinter(t)
	e := &eventsv1.Event{
		ObjectMeta:          objMeta("web-1.17a", time.Hour),
		EventTime:           metav1.NewMicroTime(testNow.Add(-time.Hour)),
		Series:              &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(testNow.Add(-time.Minute))},
		ReportingController: "podkit.io/scheduler",
		ReportingInstance:   "scheduler-0",
		Action:              "Binding",
		Reason:              "Scheduled",
		Regarding:           corev1.ObjectReference{Kind: "Pod", Name: "web-1"},
		Note:                "Successfully assigned default/web-1 to node-1",
		Type:                "Normal",
	}
	assert.Equal(t, []any{"60s", "Normal", "Scheduled", "pod/web-1", "", "podkit.io/scheduler, scheduler-0", "Successfully assigned default/web-1 to node-1", "60m", int64(3), "web-1.17a"}, cellsOf(t, p, e))

	legacy := &eventsv1.Event{
		ObjectMeta:               objMeta("old", time.Hour),
		Regarding:                corev1.ObjectReference{Kind: "Node", Name: "n1"},
		Reason:                   "NodeReady",
		DeprecatedSource:         corev1.EventSource{Component: "kubelet", Host: "n1"},
		DeprecatedFirstTimestamp: ago(20 * time.Minute),
		DeprecatedLastTimestamp:  ago(2 * time.Minute),
		DeprecatedCount:          2,
	}
	assert.Equal(t, []any{"2m", "", "NodeReady", "node/n1", "", "kubelet, n1", "", "20m", int64(2), "old"}, cellsOf(t, p, legacy))
	assert.Equal(t, p.ColumnDefinitions(&corev1.Event{}), p.ColumnDefinitions(e))
}
