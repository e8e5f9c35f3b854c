package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/podkit/podkit/internal/testutil"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The real kubectl against the handler, with just enough of an API server
// around it (legacy discovery, and pods that can be read, created and
// patched) to run apply and explain. Set PODKIT_KUBECTL to a
// colon-separated list of kubectl binaries; by default the versioned
// binaries of the Google Cloud SDK are used when present.

func kubectlBinaries(t *testing.T) []string {
	list := os.Getenv("PODKIT_KUBECTL")
	if list == "" {
		list = "/usr/lib/google-cloud-sdk/bin/kubectl.1.27:/usr/lib/google-cloud-sdk/bin/kubectl.1.32"
	}
	var out []string
	for _, p := range filepath.SplitList(list) {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		testutil.SkipOrFail(t, "no kubectl binary found; set PODKIT_KUBECTL")
	}
	return out
}

type request struct {
	method, path, query, contentType string
	body                             []byte
}

// fakeServer serves discovery for testResources and stores pods in memory.
type fakeServer struct {
	openapi http.Handler
	mu      sync.Mutex
	pods    map[string][]byte
	log     []request
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.log = append(f.log, request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), body})
	f.mu.Unlock()
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/openapi/"):
		f.openapi.ServeHTTP(w, r)
	case p == "/api":
		writeJSON(w, 200, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
	case p == "/apis":
		writeJSON(w, 200, apiGroups())
	case p == "/api/v1" || strings.Count(p, "/") == 3 && strings.HasPrefix(p, "/apis/"):
		writeJSON(w, 200, resourceList(p))
	case strings.HasPrefix(p, "/api/v1/namespaces/default/pods/"):
		f.pod(w, r, p, body)
	default:
		writeStatus(w, 404, metav1.StatusReasonNotFound, "not found")
	}
}

func (f *fakeServer) pod(w http.ResponseWriter, r *http.Request, p string, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		if b, ok := f.pods[p]; ok {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b)
			return
		}
		writeStatus(w, 404, metav1.StatusReasonNotFound, `pods "`+filepath.Base(p)+`" not found`)
	case http.MethodPatch:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(f.pods[p])
	default:
		writeStatus(w, 405, metav1.StatusReasonMethodNotAllowed, "no")
	}
}

// requests returns the requests seen so far with the given method.
func (f *fakeServer) requests(method string) []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []request
	for _, r := range f.log {
		if r.method == method {
			out = append(out, r)
		}
	}
	return out
}

func (f *fakeServer) reset(podPath string, pod []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = nil
	f.pods[podPath] = pod
}

func writeJSON(w http.ResponseWriter, code int, v interface{}) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func apiGroups() *metav1.APIGroupList {
	l := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	seen := map[string]bool{}
	for _, r := range testResources() {
		g := r.GroupVersionKind.GroupVersion()
		if g.Group == "" || seen[g.Group] {
			continue
		}
		seen[g.Group] = true
		gv := metav1.GroupVersionForDiscovery{GroupVersion: g.String(), Version: g.Version}
		l.Groups = append(l.Groups, metav1.APIGroup{Name: g.Group, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv})
	}
	return l
}

func resourceList(p string) *metav1.APIResourceList {
	gv, _ := schema.ParseGroupVersion(strings.TrimPrefix(strings.TrimPrefix(p, "/api/"), "/apis/"))
	l := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, r := range testResources() {
		if r.GroupVersionKind.GroupVersion() != gv {
			continue
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: r.Resource, Namespaced: r.Namespaced,
			Kind: r.GroupVersionKind.Kind, Verbs: r.Verbs, SingularName: strings.ToLower(r.GroupVersionKind.Kind)})
		for _, s := range r.Subresources {
			k := s.GroupVersionKind
			if k.Empty() {
				k = r.GroupVersionKind
			}
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: r.Resource + "/" + s.Name,
				Namespaced: r.Namespaced, Group: k.Group, Version: k.Version, Kind: k.Kind, Verbs: s.Verbs})
		}
	}
	return l
}

func runKubectl(t *testing.T, bin, server string, args ...string) (string, string, error) {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--server=" + server, "--cache-dir=" + filepath.Join(home, "cache")}, args...)...)
	cmd.Env = []string{"HOME=" + home, "KUBECONFIG=" + filepath.Join(home, "none")}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

const e2ePod = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: web
    image: nginx:1.27
    ports: [{containerPort: 80}]
    env: [{name: MODE, value: prod}]
`

func TestRealKubectl(t *testing.T) {
	bins := kubectlBinaries(t)
	dir := t.TempDir()
	manifest := filepath.Join(dir, "pod.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(e2ePod), 0o600))

	for _, bin := range bins {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			f := &fakeServer{openapi: newTestHandler(t), pods: map[string][]byte{}}
			srv := httptest.NewServer(f)
			defer srv.Close()

			t.Run("apply creates with server-side field validation", func(t *testing.T) {
				// An unknown field: kubectl's own schema validation would
				// reject it; with fieldValidation supported it is left to
				// the server.
				bogus := filepath.Join(t.TempDir(), "bogus.yaml")
				require.NoError(t, os.WriteFile(bogus, []byte(strings.Replace(e2ePod, "    env:", "    bogus: 1\n    env:", 1)), 0o600))
				out, stderr, err := runKubectl(t, bin, srv.URL, "apply", "-f", bogus)
				require.Error(t, err, "the fake server does not implement create")
				posts := f.requests(http.MethodPost)
				require.Len(t, posts, 1, "kubectl POSTed the pod; stdout %s stderr %s", out, stderr)
				post := posts[0]
				assert.Equal(t, "/api/v1/namespaces/default/pods", post.path)
				assert.Contains(t, string(post.body), `"bogus":1`)
				assert.Contains(t, post.query, "fieldValidation=Strict",
					"kubectl found fieldValidation in the OpenAPI and left validation to the server")
				assert.NotContains(t, stderr, "openapi")
			})

			t.Run("apply patches with strategic merge patch from OpenAPI", func(t *testing.T) {
				var obj map[string]interface{}
				require.NoError(t, json.Unmarshal(toJSON(t, e2ePod), &obj))
				last, _ := json.Marshal(obj)
				obj["metadata"] = map[string]interface{}{"name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "5",
					"annotations": map[string]interface{}{"kubectl.kubernetes.io/last-applied-configuration": string(last)}}
				cur, _ := json.Marshal(obj)
				f.reset("/api/v1/namespaces/default/pods/web", cur)
				changed := strings.Replace(e2ePod, "nginx:1.27", "nginx:1.28", 1)
				require.NoError(t, os.WriteFile(manifest, []byte(changed), 0o600))

				out, stderr, err := runKubectl(t, bin, srv.URL, "apply", "-f", manifest)
				require.NoError(t, err, "stdout %s stderr %s", out, stderr)
				assert.NotContains(t, stderr, "warning", "no fallback from the OpenAPI patch computation")
				patches := f.requests(http.MethodPatch)
				require.Len(t, patches, 1)
				patch := patches[0]
				assert.Equal(t, "application/strategic-merge-patch+json", patch.contentType)
				assert.Contains(t, patch.query, "fieldValidation=Strict")
				assert.Contains(t, string(patch.body), `"$setElementOrder/containers":[{"name":"web"}]`)
				assert.Contains(t, string(patch.body), `"image":"nginx:1.28"`)
				require.NoError(t, os.WriteFile(manifest, []byte(e2ePod), 0o600))
			})

			t.Run("explain", func(t *testing.T) {
				out, stderr, err := runKubectl(t, bin, srv.URL, "explain", "pods.spec.containers")
				require.NoError(t, err, "stderr %s", stderr)
				assert.Contains(t, out, "KIND:")
				assert.Contains(t, out, "Pod")
				assert.Regexp(t, `name\s+<string>\s+-required-`, out)
				assert.Regexp(t, `ports\s+<\[\]ContainerPort>`, out)
				assert.Contains(t, out, "List of containers belonging to the pod", "descriptions are served")

				out, stderr, err = runKubectl(t, bin, srv.URL, "explain", "pods.spec.containers", "--output=plaintext-openapiv2")
				require.NoError(t, err, "stderr %s", stderr)
				assert.Contains(t, out, "RESOURCE: containers <[]Object>", "the v2 explain renderer")
				assert.Regexp(t, `name\s+<string> -required-`, out)

				out, stderr, err = runKubectl(t, bin, srv.URL, "explain", "deployments.spec.strategy.rollingUpdate.maxSurge")
				require.NoError(t, err, "stderr %s", stderr)
				assert.Contains(t, out, "maxSurge")
				assert.Contains(t, out, "apps")

				out, stderr, err = runKubectl(t, bin, srv.URL, "explain", "clusterroles", "--recursive")
				require.NoError(t, err, "stderr %s", stderr)
				assert.Contains(t, out, "rules")
				assert.Contains(t, out, "verbs")
			})
		})
	}
}
