package openapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/openapi"
)

func ExampleNewHandler() {
	h, err := openapi.NewHandler([]openapi.Resource{{
		GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		Resource:         "configmaps",
		Namespaced:       true,
		Verbs:            []string{"create", "delete", "get", "list", "patch", "update", "watch"},
		Object:           &corev1.ConfigMap{},
		List:             &corev1.ConfigMapList{},
	}}, openapi.Info{Version: "v1.33.0"})
	if err != nil {
		panic(err)
	}
	fmt.Println(h.V3().Names())

	// kubectl fetches the v2 document as protobuf.
	r := httptest.NewRequest(http.MethodGet, "/openapi/v2", nil)
	r.Header.Set("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Header().Get("Content-Type"))

	// A second request with the ETag is answered with 304.
	r.Header.Set("If-None-Match", w.Header().Get("Etag"))
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Code)
	// Output:
	// [api api/v1]
	// 200 application/com.github.proto-openapi.spec.v2.v1.0+protobuf
	// 304
}
