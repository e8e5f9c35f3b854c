package printers

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/podkit/podkit/internal/testutil"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// fakeAPIServer serves legacy discovery and a few lists on 127.0.0.1, with
// Tables from a Printer when the client asks for them, enough for the real
// kubectl to run `get`.
func fakeAPIServer(t *testing.T, p *Printer, lists map[string]runtime.Object) *httptest.Server {
	t.Helper()
	_, rowSerializer, tableEncoder := tableCodecs(t)
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(v); err != nil {
			t.Errorf("writing discovery: %v", err)
		}
	}
	resource := func(name, kind string, namespaced bool) metav1.APIResource {
		return metav1.APIResource{Name: name, Kind: kind, Namespaced: namespaced, Verbs: metav1.Verbs{"get", "list"}}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/version", func(w http.ResponseWriter, _ *http.Request) {
		// kubectl dispatchers (such as Google Cloud SDK's) pick their kubectl by it.
		writeJSON(w, map[string]string{"major": "1", "minor": "33", "gitVersion": "v1.33.0", "platform": "linux/amd64"})
	})
	mux.HandleFunc("/api", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, _ *http.Request) {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"}
		writeJSON(w, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}}})
	})
	mux.HandleFunc("/api/v1", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{resource("pods", "Pod", true), resource("nodes", "Node", false), resource("services", "Service", true)}})
	})
	mux.HandleFunc("/apis/apps/v1", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "apps/v1",
			APIResources: []metav1.APIResource{resource("deployments", "Deployment", true)}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Logf("%s %s Accept=%s", r.Method, r.URL, r.Header.Get("Accept"))
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		list, ok := lists[parts[len(parts)-1]]
		if named, isGet := lists[parts[len(parts)-2]]; !ok && isGet { // GET of one object
			list, ok = findItem(named, parts[len(parts)-1])
		}
		if !ok || !strings.Contains(r.Header.Get("Accept"), "as=Table") {
			http.NotFound(w, r)
			return
		}
		opts := &metav1.TableOptions{IncludeObject: metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))}
		table, err := p.ConvertToTable(r.Context(), list, opts)
		if err == nil {
			err = EncodeRowObjects(table, rowSerializer)
		}
		var body bytes.Buffer
		if err == nil {
			err = tableEncoder.Encode(table, &body)
		}
		if err != nil {
			t.Errorf("serving %s: %v", r.URL, err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body.Bytes())
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// findItem returns the item of list with the given name.
func findItem(list runtime.Object, name string) (runtime.Object, bool) {
	items, _ := meta.ExtractList(list)
	for _, item := range items {
		if m, err := meta.Accessor(item); err == nil && m.GetName() == name {
			return item, true
		}
	}
	return nil, false
}

// The real kubectl (skipped when it is not installed) prints the usual
// columns from podkit's Tables.
func TestRealKubectlGet(t *testing.T) {
	kubectl := os.Getenv("PODKIT_KUBECTL") // a specific kubectl, e.g. kubectl.1.27
	if kubectl == "" {
		kubectl = testutil.Kubectl(t, 32) // skips, or fails under PODKIT_PRIVILEGED=require
	}
	p := newTestPrinter(t)
	pods := podList()
	pods.Continue, pods.RemainingItemCount = "", nil // kubectl would follow the continue token
	pods.Items[1].Spec.NodeName = "node-1"
	pods.Items[1].Status.PodIPs = []corev1.PodIP{{IP: "10.244.1.9"}}
	srv := fakeAPIServer(t, p, map[string]runtime.Object{
		"pods": pods,
		"nodes": &corev1.NodeList{Items: []corev1.Node{{
			ObjectMeta: metav1.ObjectMeta{Name: "node-1", CreationTimestamp: ago(48 * time.Hour), Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
			Spec:       corev1.NodeSpec{Unschedulable: true},
			Status: corev1.NodeStatus{
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.2"},
			},
		}}},
		"services": &corev1.ServiceList{Items: []corev1.Service{{
			ObjectMeta: objMeta("web", 5*time.Minute),
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.96.0.20"},
				Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}}},
		}}},
		"deployments": &appsv1.DeploymentList{Items: []appsv1.Deployment{{
			ObjectMeta: objMeta("web", 3*time.Hour),
			Spec:       appsv1.DeploymentSpec{Replicas: ptr(int32(3)), Selector: webSelector, Template: template()},
			Status:     appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2},
		}}},
	})

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "`+srv.URL+`"}}]
users: [{name: fake, user: {}}]
contexts: [{name: fake, context: {cluster: fake, user: fake, namespace: default}}]
current-context: fake
`), 0o600))

	get := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(dir, "cache"), "get"}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "kubectl get %v: %s", args, stderr.String())
		return stdout.String()
	}

	assert.Equal(t, ""+
		"NAME   READY   STATUS    RESTARTS   AGE\n"+
		"a      0/1     Pending   0          60s\n"+
		"b      0/1     Running   0          60m\n", get("pods"))
	assert.Equal(t, ""+
		"NAMESPACE     NAME   READY   STATUS    RESTARTS   AGE   IP           NODE     NOMINATED NODE   READINESS GATES\n"+
		"default       a      0/1     Pending   0          60s   <none>       <none>   <none>           <none>\n"+
		"kube-system   b      0/1     Running   0          60m   10.244.1.9   node-1   <none>           <none>\n", get("pods", "-A", "-o", "wide"))
	assert.Equal(t, ""+
		"NAME   READY   STATUS    RESTARTS   AGE   LABELS\n"+
		"a      0/1     Pending   0          60s   app=a\n"+
		"b      0/1     Running   0          60m   <none>\n", get("pods", "--show-labels"))
	assert.Equal(t, ""+
		"NAME     STATUS                     ROLES           AGE   VERSION\n"+
		"node-1   Ready,SchedulingDisabled   control-plane   2d    v1.37.2\n", get("nodes"))
	assert.Equal(t, ""+
		"NAME   TYPE       CLUSTER-IP   EXTERNAL-IP   PORT(S)        AGE\n"+
		"web    NodePort   10.96.0.20   <none>        80:30080/TCP   5m\n", get("services"))
	assert.Equal(t, ""+
		"NAME   READY   UP-TO-DATE   AVAILABLE   AGE   CONTAINERS   IMAGES               SELECTOR\n"+
		"web    2/3     3            2           3h    app,log      nginx:1.27,busybox   app=web\n", get("deployments", "-o", "wide"))
	assert.Equal(t, "b     0/1   Running   0     60m\n", get("pods", "b", "--no-headers"))
}
