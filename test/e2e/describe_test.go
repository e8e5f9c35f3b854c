package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// scheduledMessage is the message of the Scheduled event the tests post.
const scheduledMessage = "Successfully assigned default/nginx to node-1"

// TestKubectlDescribeAndEvents: describe pod (which finds the pod's events
// by field selector), get events and kubectl events.
func TestKubectlDescribeAndEvents(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		c := srv.Client()
		pod := createPod(t, c, "nginx")

		out := k.OK("describe", "pod", "nginx")
		for key, want := range map[string]string{
			"Name":      "nginx",
			"Namespace": "default",
			"Node":      "<none>",
			"Status":    "Pending",
			"Labels":    "app=nginx",
			"Image":     "nginx:1.27",
			"QoS Class": "Burstable",
			"Events":    "<none>",
		} {
			assert.Equal(t, want, describeField(out, key), "describe field %q in:\n%s", key, out)
		}
		assert.Contains(t, out, "tier=web")
		assert.Contains(t, out, "/var/cache/nginx from cache (rw)")
		assert.Regexp(t, `(?m)^\s+Port:\s+80/TCP`, out)
		assert.Regexp(t, `NGINX_PORT:\s+80`, out)
		assert.Regexp(t, `cpu:\s+200m`, out)

		postScheduledEvent(t, c, pod)

		out = k.OK("describe", "pod", "nginx")
		assert.NotEqual(t, "<none>", describeField(out, "Events"), "describe:\n%s", out)
		assert.Regexp(t, `(?m)^\s+Normal\s+Scheduled\s+\S+\s+default-scheduler\s+`+scheduledMessage+`$`, out)

		out = k.OK("get", "events")
		assert.Equal(t, []string{"LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}, fields(header(out)))
		assert.Regexp(t, `(?m)^\S+\s+Normal\s+Scheduled\s+pod/nginx\s+`+scheduledMessage+`$`, out)

		out = k.OK("events")
		assert.Equal(t, []string{"LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}, fields(header(out)))
		assert.Regexp(t, `(?m)^\S+\s+Normal\s+Scheduled\s+Pod/nginx\s+`+scheduledMessage+`$`, out)
	})
}

// postScheduledEvent records a core/v1 Event about pod like kube-scheduler.
func postScheduledEvent(t *testing.T, c kubernetes.Interface, pod *corev1.Pod) {
	t.Helper()
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name + ".scheduled", Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, ResourceVersion: pod.ResourceVersion,
		},
		Reason:              "Scheduled",
		Message:             scheduledMessage,
		Source:              corev1.EventSource{Component: "default-scheduler"},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                corev1.EventTypeNormal,
		ReportingController: "default-scheduler",
		ReportingInstance:   "default-scheduler-e2e",
	}
	_, err := c.CoreV1().Events(pod.Namespace).Create(testContext(t, apiTimeout), ev, metav1.CreateOptions{})
	require.NoError(t, err)
}

// describeField returns the value of the first "Key:   value" line of
// kubectl describe output (any indentation).
func describeField(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), key+":"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}
