package apiserver_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/apiserver"
)

// standInKubelet plays a kubelet's /containerLogs: it records each
// request and answers from a table of paths.
type standInKubelet struct {
	mu       sync.Mutex
	requests []*url.URL
	release  chan struct{} // the follow answer's second line waits for it
}

func (k *standInKubelet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	k.requests = append(k.requests, r.URL)
	k.mu.Unlock()
	switch r.URL.Path {
	case "/containerLogs/default/web/app", "/containerLogs/default/multi/b":
		if r.URL.Query().Get("follow") == "true" {
			_, _ = io.WriteString(w, "first\n")
			http.NewResponseController(w).Flush()
			<-k.release
			_, _ = io.WriteString(w, "second\n")
			return
		}
		_, _ = io.WriteString(w, "hello\nworld\n")
	case "/containerLogs/default/waiting/app":
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `container "app" in pod "waiting" is waiting to start: ContainerCreating`)
	case "/containerLogs/default/lost/app":
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `pod "lost" does not exist`)
	case "/containerLogs/default/broken/app":
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, "disk on fire")
	default:
		http.NotFound(w, r)
	}
}

// last returns the last request the stand-in saw.
func (k *standInKubelet) last() *url.URL {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.requests) == 0 {
		return nil
	}
	return k.requests[len(k.requests)-1]
}

// addNode creates a node whose kubelet serves at hostport.
func addNode(t *testing.T, c kubernetes.Interface, name, hostport string) {
	t.Helper()
	host, port, err := net.SplitHostPort(hostport)
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: host}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(p)}},
	}}
	_, err = c.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{})
	require.NoError(t, err)
}

// addPod creates a pod on node with the named containers.
func addPod(t *testing.T, c kubernetes.Interface, name, node string, containers ...string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node}}
	for _, n := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: n, Image: "busybox"})
	}
	if name == "multi" {
		pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"}}
	}
	_, err := c.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
}

// logs reads a pod's log through client-go.
func logs(t *testing.T, c kubernetes.Interface, pod string, opts *corev1.PodLogOptions) (string, error) {
	t.Helper()
	rc, err := c.CoreV1().Pods("default").GetLogs(pod, opts).Stream(t.Context())
	if err != nil {
		return "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(data), nil
}

func TestPodLog(t *testing.T) {
	kubelet := &standInKubelet{release: make(chan struct{})}
	ks := httptest.NewServer(kubelet)
	t.Cleanup(ks.Close)
	ts := newTestServer(t)
	c := ts.client
	addNode(t, c, "node-1", ks.Listener.Addr().String())
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := dead.Addr().String()
	require.NoError(t, dead.Close())
	addNode(t, c, "node-dead", deadAddr)
	for _, p := range []struct{ name, node string }{{"web", "node-1"}, {"waiting", "node-1"}, {"lost", "node-1"},
		{"broken", "node-1"}, {"pending", ""}, {"orphan", "node-ghost"}, {"unreachable", "node-dead"}} {
		addPod(t, c, p.name, p.node, "app")
	}
	addPod(t, c, "multi", "node-1", "a", "b")

	n := func(v int64) *int64 { return &v }
	since := metav1.NewTime(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC))
	t.Run("forwarded options", func(t *testing.T) {
		for _, tc := range []struct {
			name      string
			pod       string
			opts      corev1.PodLogOptions
			wantPath  string
			wantQuery url.Values
		}{
			{"defaults", "web", corev1.PodLogOptions{}, "/containerLogs/default/web/app", url.Values{}},
			{"every option", "web", corev1.PodLogOptions{Container: "app", Previous: true, Timestamps: true,
				TailLines: n(2), LimitBytes: n(100), SinceSeconds: n(60)}, "/containerLogs/default/web/app",
				url.Values{"previous": {"true"}, "timestamps": {"true"}, "tailLines": {"2"}, "limitBytes": {"100"}, "sinceSeconds": {"60"}}},
			{"since time", "web", corev1.PodLogOptions{SinceTime: &since}, "/containerLogs/default/web/app",
				url.Values{"sinceTime": {"2024-03-01T12:00:00Z"}}},
			{"named container", "multi", corev1.PodLogOptions{Container: "b"}, "/containerLogs/default/multi/b", url.Values{}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out, err := logs(t, c, tc.pod, &tc.opts)
				require.NoError(t, err)
				assert.Equal(t, "hello\nworld\n", out)
				got := kubelet.last()
				assert.Equal(t, tc.wantPath, got.Path)
				assert.Equal(t, tc.wantQuery, got.Query())
			})
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			pod    string
			opts   corev1.PodLogOptions
			code   int32
			reason metav1.StatusReason
			msg    string
		}{
			{"container required", "multi", corev1.PodLogOptions{}, 400, metav1.StatusReasonBadRequest,
				"a container name must be specified for pod multi, choose one of: [setup a b]"},
			{"unknown container", "web", corev1.PodLogOptions{Container: "x"}, 400, metav1.StatusReasonBadRequest,
				"container x is not valid for pod web"},
			{"negative tail", "web", corev1.PodLogOptions{TailLines: n(-1)}, 422, metav1.StatusReasonInvalid,
				`PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0`},
			{"zero limit", "web", corev1.PodLogOptions{LimitBytes: n(0)}, 422, metav1.StatusReasonInvalid,
				`PodLogOptions "web" is invalid: limitBytes: Invalid value: 0: must be greater than 0`},
			{"both since", "web", corev1.PodLogOptions{SinceSeconds: n(5), SinceTime: &since}, 422, metav1.StatusReasonInvalid,
				"at most one of `sinceTime` or `sinceSeconds` may be specified"},
			{"no pod", "nope", corev1.PodLogOptions{}, 404, metav1.StatusReasonNotFound, `pods "nope" not found`},
			{"no node", "orphan", corev1.PodLogOptions{}, 404, metav1.StatusReasonNotFound, `nodes "node-ghost" not found`},
			{"kubelet says waiting", "waiting", corev1.PodLogOptions{}, 400, metav1.StatusReasonBadRequest,
				`container "app" in pod "waiting" is waiting to start: ContainerCreating`},
			{"kubelet says not found", "lost", corev1.PodLogOptions{}, 404, metav1.StatusReasonNotFound,
				"the server could not find the requested resource ( pods/log lost)"},
			{"kubelet fails", "broken", corev1.PodLogOptions{}, 500, metav1.StatusReasonInternalError,
				"Internal error occurred: disk on fire"},
			{"kubelet unreachable", "unreachable", corev1.PodLogOptions{}, 500, "", "connection refused"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := logs(t, c, tc.pod, &tc.opts)
				require.Error(t, err)
				var st apierrors.APIStatus
				require.ErrorAs(t, err, &st, "%v", err)
				assert.Equal(t, tc.code, st.Status().Code, "%v", err)
				assert.Equal(t, tc.reason, st.Status().Reason, "%v", err)
				assert.Contains(t, st.Status().Message, tc.msg)
			})
		}
	})

	t.Run("pod without a node has an empty log", func(t *testing.T) {
		out, err := logs(t, c, "pending", &corev1.PodLogOptions{})
		require.NoError(t, err)
		assert.Empty(t, out)
	})

	t.Run("follow streams as it arrives", func(t *testing.T) {
		rc, err := c.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{Follow: true}).Stream(t.Context())
		require.NoError(t, err)
		defer rc.Close()
		rd := bufio.NewReader(rc)
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, "first\n", line, "flushed before the kubelet finished")
		assert.Equal(t, "true", kubelet.last().Query().Get("follow"))
		close(kubelet.release)
		rest, err := io.ReadAll(rd)
		require.NoError(t, err)
		assert.Equal(t, "second\n", string(rest))
	})

	t.Run("discovery", func(t *testing.T) {
		list, err := c.Discovery().ServerResourcesForGroupVersion("v1")
		require.NoError(t, err)
		var found *metav1.APIResource
		for i := range list.APIResources {
			if list.APIResources[i].Name == "pods/log" {
				found = &list.APIResources[i]
			}
		}
		require.NotNil(t, found, "pods/log in discovery")
		assert.Equal(t, []string{"get"}, []string(found.Verbs))
		assert.Equal(t, "Pod", found.Kind)
		assert.True(t, found.Namespaced)
	})

	t.Run("other verbs", func(t *testing.T) {
		code, _, body := do(t, http.MethodPost, ts.http.URL+"/api/v1/namespaces/default/pods/web/log", "application/json", "", "{}")
		assert.Equal(t, http.StatusMethodNotAllowed, code, body)
		code, _, body = do(t, http.MethodGet, ts.http.URL+"/api/v1/namespaces/default/pods/web/log?tailLines=x", "", "", "")
		assert.Equal(t, http.StatusBadRequest, code, body)
		code, _, _ = do(t, http.MethodGet, ts.http.URL+"/api/v1/namespaces/default/services/web/log", "", "", "")
		assert.Equal(t, http.StatusNotFound, code, "only pods have logs")
	})
}

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestPodLogInjectedKubeletClient routes pods/log to a kubelet handler in
// process, without TCP, through Config.KubeletClient.
func TestPodLogInjectedKubeletClient(t *testing.T) {
	kubelet := &standInKubelet{}
	var nodes []string
	inProcess := func(ctx context.Context, node *corev1.Node) (*url.URL, http.RoundTripper, error) {
		nodes = append(nodes, node.Name)
		return &url.URL{Scheme: "http", Host: node.Name + ".kubelet.invalid"}, roundTripFunc(func(r *http.Request) (*http.Response, error) {
			rec := httptest.NewRecorder()
			kubelet.ServeHTTP(rec, r)
			return rec.Result(), nil
		}), nil
	}
	ts := newTestServer(t, func(cfg *apiserver.Config) { cfg.KubeletClient = inProcess })
	_, err := ts.client.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	addPod(t, ts.client, "web", "node-1", "app")
	out, err := logs(t, ts.client, "web", &corev1.PodLogOptions{})
	require.NoError(t, err)
	assert.Equal(t, "hello\nworld\n", out)
	assert.Equal(t, []string{"node-1"}, nodes)
	assert.Equal(t, "node-1.kubelet.invalid", kubelet.last().Host)
}

// TestPodLogNotCountedInFlight: a follow does not hold one of the
// in-flight slots, like a watch.
func TestPodLogNotCountedInFlight(t *testing.T) {
	kubelet := &standInKubelet{release: make(chan struct{})}
	ks := httptest.NewServer(kubelet)
	t.Cleanup(ks.Close)
	ts := newTestServer(t, func(cfg *apiserver.Config) { cfg.MaxRequestsInFlight = 1 })
	addNode(t, ts.client, "node-1", ks.Listener.Addr().String())
	addPod(t, ts.client, "web", "node-1", "app")
	rc, err := ts.client.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{Follow: true}).Stream(t.Context())
	require.NoError(t, err)
	defer rc.Close()
	line, err := bufio.NewReader(rc).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "first\n", line)
	_, err = ts.client.CoreV1().Pods("default").Get(t.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err, "the only in-flight slot is free while a log streams")
	close(kubelet.release)
}

func TestKubeletURL(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	_, err := apiserver.KubeletURL(node, "http")
	require.ErrorIs(t, err, apiserver.ErrNoKubeletAddress)

	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n.local"}}
	u, err := apiserver.KubeletURL(node, "http")
	require.NoError(t, err)
	assert.Equal(t, "http://n.local:10250", u.String(), "default port")

	node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::1"})
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = 10255
	u, err = apiserver.KubeletURL(node, "https")
	require.NoError(t, err)
	assert.Equal(t, "https://[fd00::1]:10255", u.String(), "InternalIP first")

	u, err = apiserver.KubeletURL(node, "http", corev1.NodeHostName)
	require.NoError(t, err)
	assert.Equal(t, "http://n.local:10255", u.String())
}
