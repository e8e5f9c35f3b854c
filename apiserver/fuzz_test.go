package apiserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

var fuzzContentTypes = []string{
	"application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
	"application/merge-patch+json", "application/strategic-merge-patch+json", "application/json-patch+json",
}

func fuzzServer(f *testing.F) http.Handler {
	f.Helper()
	srv, err := apiserver.New(apiserver.Config{Store: memory.New()})
	if err != nil {
		f.Fatal(err)
	}
	if err := srv.Bootstrap(context.Background()); err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	seed := httptest.NewRequest("POST", "/api/v1/namespaces/default/pods", strings.NewReader(
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"seed"},"spec":{"containers":[{"name":"c","image":"i"}]}}`))
	seed.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, seed)
	if rec.Code != http.StatusCreated {
		f.Fatalf("seeding pod: %d %s", rec.Code, rec.Body)
	}
	return h
}

// FuzzRequestDecoding sends arbitrary bodies with every content type to the
// create, update and patch paths. Bad input must get a 4xx Status, never a
// panic or a 500.
func FuzzRequestDecoding(f *testing.F) {
	h := fuzzServer(f)
	f.Add(uint8(0), uint8(0), []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i"}]}}`))
	f.Add(uint8(1), uint8(1), []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: seed\nspec:\n  containers: []\n"))
	f.Add(uint8(3), uint8(2), []byte(`{"metadata":{"labels":{"a":"b"}}}`))
	f.Add(uint8(4), uint8(2), []byte(`{"spec":{"containers":[{"name":"c","$patch":"delete"}]}}`))
	f.Add(uint8(5), uint8(2), []byte(`[{"op":"replace","path":"/spec/containers/0/image","value":"x"}]`))
	f.Add(uint8(2), uint8(0), []byte("k8s\x00\x0a\x02v1"))
	f.Add(uint8(0), uint8(3), []byte(`{"kind":"Binding","apiVersion":"v1","target":{"name":"n"}}`))
	f.Fuzz(func(t *testing.T, ct, target uint8, body []byte) {
		method, path := "POST", "/api/v1/namespaces/default/pods"
		switch target % 5 {
		case 1:
			method, path = "PUT", "/api/v1/namespaces/default/pods/seed"
		case 2:
			method, path = "PATCH", "/api/v1/namespaces/default/pods/seed"
		case 3:
			path = "/api/v1/namespaces/default/pods/seed/binding"
		case 4:
			method, path = "PATCH", "/apis/apps/v1/namespaces/default/deployments/none/scale"
		}
		req := httptest.NewRequest(method, path+"?fieldValidation=Strict&dryRun=All", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", fuzzContentTypes[int(ct)%len(fuzzContentTypes)])
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s with %q: %d %s", method, path, body, rec.Code, rec.Body)
		}
	})
}
