package apiserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver"
)

// syncBuffer is a sink safe to read while the server writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// events parses the audit lines written so far.
func (b *syncBuffer) events(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), "one JSON object per line: %s", sc.Text())
		out = append(out, ev)
	}
	return out
}

// find returns the events for verb on resource/name.
func find(evs []map[string]any, verb, resource, name string) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		ref, _ := ev["objectRef"].(map[string]any)
		if ev["verb"] == verb && ref != nil && ref["resource"] == resource && (name == "" || ref["name"] == name) {
			out = append(out, ev)
		}
	}
	return out
}

func auditPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func TestAuditMetadata(t *testing.T) {
	ctx := context.Background()
	sink := &syncBuffer{}
	ts := newTestServer(t, func(c *apiserver.Config) {
		c.Audit = &apiserver.Audit{Sink: sink, Policy: apiserver.AuditMetadata}
	})
	_, err := ts.client.CoreV1().Pods("default").Create(ctx, auditPod("web"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = ts.client.CoreV1().Pods("default").Get(ctx, "missing", metav1.GetOptions{})
	require.Error(t, err)
	_, err = ts.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)

	evs := sink.events(t)
	created := find(evs, "create", "pods", "")
	require.Len(t, created, 1)
	ev := created[0]
	assert.Equal(t, "Event", ev["kind"])
	assert.Equal(t, "audit.k8s.io/v1", ev["apiVersion"])
	assert.Equal(t, "Metadata", ev["level"])
	assert.Equal(t, "ResponseComplete", ev["stage"])
	assert.NotEmpty(t, ev["auditID"])
	assert.NotEmpty(t, ev["requestReceivedTimestamp"])
	assert.NotEmpty(t, ev["stageTimestamp"])
	assert.Equal(t, "/api/v1/namespaces/default/pods", ev["requestURI"])
	assert.Equal(t, map[string]any{"resource": "pods", "namespace": "default", "apiVersion": "v1"}, ev["objectRef"])
	assert.Equal(t, float64(201), ev["responseStatus"].(map[string]any)["code"])
	assert.Nil(t, ev["requestObject"], "Metadata records no bodies")
	assert.Contains(t, ev["userAgent"], "")

	missing := find(evs, "get", "pods", "missing")
	require.Len(t, missing, 1)
	assert.Equal(t, float64(404), missing[0]["responseStatus"].(map[string]any)["code"])
	assert.Len(t, find(evs, "list", "pods", ""), 1)
}

func TestAuditPolicyFileLevels(t *testing.T) {
	ctx := context.Background()
	policy, err := apiserver.ParseAuditPolicy([]byte(`
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: RequestResponse
  resources:
  - group: ""
    resources: ["pods"]
- level: Request
  verbs: ["create"]
  resources:
  - group: ""
    resources: ["configmaps"]
- level: None
`))
	require.NoError(t, err)
	sink := &syncBuffer{}
	ts := newTestServer(t, func(c *apiserver.Config) {
		c.Audit = &apiserver.Audit{Sink: sink, Policy: policy}
	})
	_, err = ts.client.CoreV1().Pods("default").Create(ctx, auditPod("web"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = ts.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = ts.client.CoreV1().ConfigMaps("default").Get(ctx, "cm", metav1.GetOptions{})
	require.NoError(t, err)

	evs := sink.events(t)
	pods := find(evs, "create", "pods", "")
	require.Len(t, pods, 1)
	assert.Equal(t, "RequestResponse", pods[0]["level"])
	require.NotNil(t, pods[0]["requestObject"], "%v", pods[0])
	req := pods[0]["requestObject"].(map[string]any)
	assert.Equal(t, "web", req["metadata"].(map[string]any)["name"])
	require.NotNil(t, pods[0]["responseObject"], "%v", pods[0])
	resp := pods[0]["responseObject"].(map[string]any)
	assert.NotEmpty(t, resp["metadata"].(map[string]any)["uid"], "the response is the created pod")

	cms := find(evs, "create", "configmaps", "")
	require.Len(t, cms, 1)
	assert.Equal(t, "Request", cms[0]["level"])
	assert.NotNil(t, cms[0]["requestObject"])
	assert.Nil(t, cms[0]["responseObject"])
	assert.Empty(t, find(evs, "get", "configmaps", "cm"), "level None: not logged")
}
