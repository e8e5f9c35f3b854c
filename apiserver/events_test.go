package apiserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Events written through events.k8s.io/v1 (as kube-scheduler writes them)
// are the core/v1 events kubectl describe lists, and the other way round.
func TestEventsShareStorageAcrossGroups(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	regarding := corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", UID: "u1", APIVersion: "v1"}

	w, err := ts.client.EventsV1().Events("default").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()

	_, err = ts.client.EventsV1().Events("default").Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web.1"}, EventTime: metav1.NewMicroTime(time.Now()),
		ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-node",
		Action: "Binding", Reason: "Scheduled", Regarding: regarding, Note: "Successfully assigned default/web to n1", Type: "Normal",
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	core, err := ts.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Pod,involvedObject.name=web,involvedObject.namespace=default"})
	require.NoError(t, err)
	require.Len(t, core.Items, 1)
	assert.Equal(t, "Successfully assigned default/web to n1", core.Items[0].Message)
	assert.Equal(t, "Scheduled", core.Items[0].Reason)

	_, err = ts.client.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web.2"}, InvolvedObject: regarding, Reason: "Pulled", Message: "pulled", Type: "Normal",
		Source: corev1.EventSource{Component: "kubelet"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	ev, err := ts.client.EventsV1().Events("default").Get(ctx, "web.2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "pulled", ev.Note)
	assert.Equal(t, "kubelet", ev.DeprecatedSource.Component)
	assert.Equal(t, "web", ev.Regarding.Name)

	for _, want := range []string{"web.1", "web.2"} {
		got := nextEvent(t, w)
		require.Equal(t, watch.Added, got.Type)
		assert.Equal(t, want, got.Object.(*eventsv1.Event).Name)
	}
}
