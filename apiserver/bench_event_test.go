package apiserver_test

// Write-path benchmarks of the requests a running cluster sends most:
// Event creates (core/v1 as kubelets and controllers write them,
// events.k8s.io/v1 as kube-scheduler does), pods/binding and pods/status
// strategic merge patches. Each op goes through Handler().ServeHTTP into a
// recorder, one at a time, over the memory store: what is measured is the
// server's own CPU per write (decoding, admission, validation,
// managedFields, storage), reported as cpu-µs/op. Results:
// docs/benchmarks.md ("Session 4: write-path savings").

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

// eventBodies are JSON Event templates with namePlaceholder as the name.
var eventBodies = map[string]struct{ path, body string }{
	"core-v1": {"/api/v1/namespaces/" + benchNamespace + "/events", `{"apiVersion":"v1","kind":"Event",` +
		`"metadata":{"name":"` + namePlaceholder + `","namespace":"` + benchNamespace + `"},` +
		`"involvedObject":{"kind":"Pod","namespace":"` + benchNamespace + `","name":"web-1","uid":"0b7c6f0e-1d2a-4c53-9a52-6f1d5b1c1e01","apiVersion":"v1","resourceVersion":"12","fieldPath":"spec.containers{web}"},` +
		`"reason":"Pulled","message":"Container image \"registry.example/web:1.2.3\" already present on machine",` +
		`"source":{"component":"kubelet","host":"node-1"},"firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T00:00:00Z",` +
		`"count":1,"type":"Normal","reportingComponent":"kubelet","reportingInstance":"node-1"}`},
	"events-v1": {"/apis/events.k8s.io/v1/namespaces/" + benchNamespace + "/events", `{"apiVersion":"events.k8s.io/v1","kind":"Event",` +
		`"metadata":{"name":"` + namePlaceholder + `","namespace":"` + benchNamespace + `"},` +
		`"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"default-scheduler","reportingInstance":"default-scheduler-node-0",` +
		`"action":"Binding","reason":"Scheduled","note":"Successfully assigned default/web-1 to node-1",` +
		`"regarding":{"kind":"Pod","namespace":"` + benchNamespace + `","name":"web-1","uid":"0b7c6f0e-1d2a-4c53-9a52-6f1d5b1c1e01","apiVersion":"v1","resourceVersion":"12"},` +
		`"type":"Normal"}`},
}

// BenchmarkEventCreate measures one Event create after another through the
// handler, for both API versions of Events, in JSON and (as client-go's
// typed clients send them by default) in protobuf.
func BenchmarkEventCreate(b *testing.B) {
	for _, v := range []string{"core-v1", "events-v1"} {
		for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
			name := v
			if mediaType == runtime.ContentTypeProtobuf {
				name += "-protobuf"
			}
			b.Run(name, func(b *testing.B) {
				env := newBenchEnv(b, openStore(b, "memory"))
				tmpl := eventBody(b, v, mediaType)
				runSequential(b, func(i int) error {
					// The name has the placeholder's length: a protobuf
					// body stays well formed.
					body := bytes.Replace(tmpl, []byte(namePlaceholder), fmt.Appendf(nil, "web-1.%016x", i), 1)
					return serveAs(env.handler, http.MethodPost, eventBodies[v].path, mediaType, body, http.StatusCreated)
				})
			})
		}
	}
}

// BenchmarkCreateAdmitted creates Events (core-v1, as BenchmarkEventCreate)
// and pods (BenchmarkPodCreate's, one after another) in protobuf, as
// client-go sends them, with the built-in admission plugins (a cluster's
// chain; the other benchmarks run none).
func BenchmarkCreateAdmitted(b *testing.B) {
	for _, kind := range []string{"event", "pod"} {
		b.Run(kind+"-protobuf", func(b *testing.B) {
			h := newAdmittedHandler(b)
			path, format := eventBodies["core-v1"].path, "web-1.%016x"
			tmpl := eventBody(b, "core-v1", runtime.ContentTypeProtobuf)
			if kind == "pod" {
				path, format = "/api/v1/namespaces/"+benchNamespace+"/pods", "web-6d8f9c7b5d-%07d"
				tmpl = encodeAs(b, benchPod(namePlaceholder, 0), runtime.ContentTypeProtobuf)
			}
			runSequential(b, func(i int) error {
				// Names of the placeholder's length keep protobuf well formed.
				body := bytes.Replace(tmpl, []byte(namePlaceholder), fmt.Appendf(nil, format, i), 1)
				return serveAs(h, http.MethodPost, path, runtime.ContentTypeProtobuf, body, http.StatusCreated)
			})
		})
	}
}

// newAdmittedHandler is a bootstrapped server over the memory store with
// the built-in admission chain.
func newAdmittedHandler(b *testing.B) http.Handler {
	b.Helper()
	st := openStore(b, "memory")
	builtins, err := admission.NewBuiltins(admission.BuiltinsConfig{Store: st, Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	chain, err := builtins.Chain(nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{Store: st, Logger: discardLogger(), Admission: chain})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Bootstrap(context.Background()); err != nil {
		b.Fatal(err)
	}
	return srv.Handler()
}

// eventBody is the Event template of eventBodies[v] in mediaType.
func eventBody(b *testing.B, v, mediaType string) []byte {
	b.Helper()
	body := []byte(eventBodies[v].body)
	if mediaType == runtime.ContentTypeJSON {
		return body
	}
	obj, _, err := scheme.Codecs(scheme.New()).UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	return encodeAs(b, obj, mediaType)
}

// encodeAs encodes obj, of a registered kind, in mediaType.
func encodeAs(b *testing.B, obj runtime.Object, mediaType string) []byte {
	b.Helper()
	s := scheme.New()
	codecs := scheme.Codecs(s)
	gvks, _, err := s.ObjectKinds(obj)
	if err != nil {
		b.Fatal(err)
	}
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		b.Fatalf("no serializer for %s", mediaType)
	}
	var buf bytes.Buffer
	if err := codecs.EncoderForVersion(info.Serializer, gvks[0].GroupVersion()).Encode(obj, &buf); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkPodWrite measures the two pod updates of every pod's birth:
// the scheduler's pods/binding create and a kubelet's pods/status strategic
// merge patch (a changed condition, never a no-op). The pods are created
// before the timer starts.
func BenchmarkPodWrite(b *testing.B) {
	b.Run("binding", func(b *testing.B) {
		env := newBenchEnv(b, openStore(b, "memory"))
		createPods(b, env.handler, b.N)
		runSequential(b, func(i int) error {
			name := fmt.Sprintf("web-%08d", i)
			body := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Binding","metadata":{"name":%q},"target":{"kind":"Node","name":"node-%d"}}`, name, i%100)
			return serveAt(env.handler, http.MethodPost, "/api/v1/namespaces/"+benchNamespace+"/pods/"+name+"/binding", "application/json", body, http.StatusCreated)
		})
	})
	b.Run("status-patch", func(b *testing.B) {
		env := newBenchEnv(b, openStore(b, "memory"))
		const pods = 100
		createPods(b, env.handler, pods)
		runSequential(b, func(i int) error {
			name := fmt.Sprintf("web-%08d", i%pods)
			body := fmt.Appendf(nil, `{"status":{"phase":"Running","podIP":"10.244.0.%d","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:%02d:%02dZ"}]}}`,
				1+i%pods, (i/60)%60, i%60)
			return servePatch(env.handler, "/api/v1/namespaces/"+benchNamespace+"/pods/"+name+"/status", body)
		})
	})
}

// createPods creates pods web-00000000 … web-(n-1) through the handler.
func createPods(b *testing.B, h http.Handler, n int) {
	b.Helper()
	tmpl := podBody(b, 0)
	for i := range n {
		body := bytes.Replace(tmpl, []byte(namePlaceholder), fmt.Appendf(nil, "web-%08d", i), 1)
		if _, err := serve(h, http.MethodPost, "application/json", body, http.StatusCreated); err != nil {
			b.Fatal(err)
		}
	}
}

// runSequential times n calls of op, one after another, and reports the
// process's CPU time per op.
func runSequential(b *testing.B, op func(i int) error) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuMeter(b)
	for i := range b.N {
		if err := op(i); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu(b.N)
}

func serveAt(h http.Handler, method, path, accept string, body []byte, code int) error {
	return serveBody(h, method, path, accept, runtime.ContentTypeJSON, body, code)
}

// serveAs sends and accepts mediaType.
func serveAs(h http.Handler, method, path, mediaType string, body []byte, code int) error {
	return serveBody(h, method, path, mediaType, mediaType, body, code)
}

func serveBody(h http.Handler, method, path, accept, contentType string, body []byte, code int) error {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Accept", accept)
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != code {
		return fmt.Errorf("%s %s: HTTP %d, want %d: %.300s", method, path, rec.Code, code, rec.Body.String())
	}
	return nil
}

func servePatch(h http.Handler, path string, body []byte) error {
	req := httptest.NewRequest(http.MethodPatch, path, bytes.NewReader(body))
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/strategic-merge-patch+json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("PATCH %s: HTTP %d: %.300s", path, rec.Code, rec.Body.String())
	}
	return nil
}

// TestWritePathNoOpsKeepTheRevision checks, through the handler, the
// "did this write change anything?" checks the write path benchmarks
// exercise: patches that change nothing keep the resourceVersion, and a
// change in status, spec, labels or annotations alone gets a new one.
func TestWritePathNoOpsKeepTheRevision(t *testing.T) {
	srv, err := apiserver.New(apiserver.Config{Store: memory.New(memory.WithLogger(discardLogger())), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	pod := benchPod("noop-pod", 0)
	pod.APIVersion, pod.Kind = "v1", "Pod"
	body, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := serveAt(h, http.MethodPost, "/api/v1/namespaces/"+benchNamespace+"/pods", "application/json", body, http.StatusCreated); err != nil {
		t.Fatal(err)
	}
	base := "/api/v1/namespaces/" + benchNamespace + "/pods/noop-pod"
	rv := func(path, patch string) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodPatch, path, strings.NewReader(patch))
		req.Header.Set("Content-Type", "application/strategic-merge-patch+json")
		req.Header.Set("User-Agent", "kubelet/v1.33.0")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("PATCH %s: HTTP %d: %s", path, rec.Code, rec.Body.String())
		}
		var pod corev1.Pod
		if err := json.Unmarshal(rec.Body.Bytes(), &pod); err != nil {
			t.Fatal(err)
		}
		return pod.ResourceVersion
	}
	steps := []struct {
		name, path, patch string
		changes           bool
	}{
		{"status set", base + "/status", `{"status":{"phase":"Running","podIP":"10.244.0.9"}}`, true},
		{"same status again", base + "/status", `{"status":{"phase":"Running","podIP":"10.244.0.9"}}`, false},
		{"condition added", base + "/status", `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`, true},
		{"same condition again", base + "/status", `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`, false},
		{"annotation", base, `{"metadata":{"annotations":{"a":"1"}}}`, true},
		{"same annotation again", base, `{"metadata":{"annotations":{"a":"1"}}}`, false},
		{"label", base, `{"metadata":{"labels":{"extra":"x"}}}`, true},
		{"empty patch", base, `{}`, false},
		{"spec image", base, `{"spec":{"containers":[{"name":"web","image":"registry.example/web:9"}]}}`, true},
	}
	last := rv(base, `{}`)
	for _, s := range steps {
		got := rv(s.path, s.patch)
		if s.changes && got == last {
			t.Errorf("%s: resourceVersion stayed %s", s.name, got)
		}
		if !s.changes && got != last {
			t.Errorf("%s: resourceVersion moved %s → %s on a no-op", s.name, last, got)
		}
		last = got
	}
}
