package openapi

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func do(t *testing.T, h http.Handler, method, target string, headers map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHandlerV2Negotiation(t *testing.T) {
	h := newTestHandler(t, WithClock(func() time.Time { return fixedNow }))
	pb, err := h.V2().Protobuf()
	require.NoError(t, err)
	for _, tc := range []struct {
		name, accept string
		code         int
		ctype        string
		body         []byte
	}{
		{"no accept", "", 200, mimeJSON, h.V2().JSON()},
		{"json", "application/json", 200, mimeJSON, h.V2().JSON()},
		{"anything", "*/*", 200, mimeJSON, h.V2().JSON()},
		{"client-go spelling", mimeV2PBOld, 200, mimeV2PB, pb},
		{"dotted spelling", mimeV2PB, 200, mimeV2PB, pb},
		{"protobuf preferred by q", "application/json;q=0.5, " + mimeV2PBOld, 200, mimeV2PB, pb},
		{"json preferred by q", mimeV2PB + ";q=0.1, application/json;q=0.9", 200, mimeJSON, h.V2().JSON()},
		{"first acceptable clause", "text/html, application/*", 200, mimeJSON, h.V2().JSON()},
		{"nothing acceptable", "text/html", 406, mimeJSON, nil},
		{"q=0 refuses", "application/json;q=0", 406, mimeJSON, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(t, h, http.MethodGet, PathV2, map[string]string{"Accept": tc.accept})
			require.Equal(t, tc.code, w.Code)
			assert.Equal(t, tc.ctype, w.Header().Get("Content-Type"))
			assert.Contains(t, w.Header().Values("Vary"), "Accept")
			if tc.body != nil {
				assert.True(t, bytes.Equal(tc.body, w.Body.Bytes()), "body")
				assert.Equal(t, `"`+h.V2().ETag()+`"`, w.Header().Get("Etag"))
				assert.Equal(t, fixedNow.Format(http.TimeFormat), w.Header().Get("Last-Modified"))
			}
		})
	}
}

func TestHandlerConditionalAndGzip(t *testing.T) {
	h := newTestHandler(t)
	etag := `"` + h.V2().ETag() + `"`

	w := do(t, h, http.MethodGet, PathV2, map[string]string{"If-None-Match": etag})
	assert.Equal(t, http.StatusNotModified, w.Code)
	assert.Empty(t, w.Body.Bytes())

	w = do(t, h, http.MethodGet, PathV2, map[string]string{"If-None-Match": `"stale"`})
	assert.Equal(t, http.StatusOK, w.Code)

	w = do(t, h, http.MethodGet, PathV2, map[string]string{"Accept": mimeV2PBOld, "Accept-Encoding": "gzip"})
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "gzip", w.Header().Get("Content-Encoding"))
	zr, err := gzip.NewReader(w.Body)
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	var doc openapiv2.Document
	require.NoError(t, proto.Unmarshal(plain, &doc))
	assert.Equal(t, "2.0", doc.GetSwagger())

	w = do(t, h, http.MethodGet, PathV2, map[string]string{"Accept-Encoding": "gzip;q=0"})
	assert.Empty(t, w.Header().Get("Content-Encoding"))

	w = do(t, h, http.MethodHead, PathV2, nil)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Empty(t, w.Body.Bytes())
}

func TestHandlerV3(t *testing.T) {
	h := newTestHandler(t, WithClock(func() time.Time { return fixedNow }))
	w := do(t, h, http.MethodGet, PathV3, nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, mimeJSON, w.Header().Get("Content-Type"))
	var disco struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &disco))
	assert.ElementsMatch(t, []string{"api", "api/v1", "apis", "apis/apps", "apis/apps/v1", "apis/batch", "apis/batch/v1",
		"apis/coordination.k8s.io", "apis/coordination.k8s.io/v1", "apis/discovery.k8s.io", "apis/discovery.k8s.io/v1",
		"apis/rbac.authorization.k8s.io", "apis/rbac.authorization.k8s.io/v1"}, keys(disco.Paths))
	apps, _ := h.V3().Document("apis/apps/v1")
	hashed := disco.Paths["apis/apps/v1"].ServerRelativeURL
	assert.Equal(t, "/openapi/v3/apis/apps/v1?hash="+apps.ETag(), hashed)
	assert.Equal(t, hashed, h.V3().ServerRelativeURL("apis/apps/v1"))

	t.Run("hashed URL is immutable", func(t *testing.T) {
		w := do(t, h, http.MethodGet, hashed, map[string]string{"Accept": "application/json"})
		require.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, "public, immutable", w.Header().Get("Cache-Control"))
		assert.Equal(t, fixedNow.AddDate(1, 0, 0).Format(http.TimeFormat), w.Header().Get("Expires"))
		assert.True(t, bytes.Equal(apps.JSON(), w.Body.Bytes()))
	})
	t.Run("stale hash redirects", func(t *testing.T) {
		w := do(t, h, http.MethodGet, "/openapi/v3/apis/apps/v1?hash=0123", nil)
		assert.Equal(t, http.StatusMovedPermanently, w.Code)
		assert.Equal(t, hashed, w.Header().Get("Location"))
	})
	t.Run("unhashed URL is not cached forever", func(t *testing.T) {
		w := do(t, h, http.MethodGet, "/openapi/v3/apis/apps/v1", nil)
		require.Equal(t, http.StatusOK, w.Code)
		assert.Empty(t, w.Header().Get("Cache-Control"))
		w = do(t, h, http.MethodGet, "/openapi/v3/apis/apps/v1", map[string]string{"If-None-Match": `"` + apps.ETag() + `"`})
		assert.Equal(t, http.StatusNotModified, w.Code)
	})
	t.Run("protobuf", func(t *testing.T) {
		for _, accept := range []string{mimeV3PB, mimeV3PBOld} {
			w := do(t, h, http.MethodGet, hashed, map[string]string{"Accept": accept})
			require.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, mimeV3PB, w.Header().Get("Content-Type"))
			var doc openapiv3.Document
			require.NoError(t, proto.Unmarshal(w.Body.Bytes(), &doc))
			assert.Equal(t, "3.0.0", doc.GetOpenapi())
		}
	})
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestHandlerErrors(t *testing.T) {
	h := newTestHandler(t)
	for _, tc := range []struct {
		name, method, target string
		code                 int
		reason               metav1.StatusReason
	}{
		{"unknown group version", http.MethodGet, "/openapi/v3/apis/example.com/v1", 404, metav1.StatusReasonNotFound},
		{"trailing slash", http.MethodGet, "/openapi/v3/", 404, metav1.StatusReasonNotFound},
		{"outside openapi", http.MethodGet, "/api/v1/pods", 404, metav1.StatusReasonNotFound},
		{"v1 does not exist", http.MethodGet, "/openapi/v1", 404, metav1.StatusReasonNotFound},
		{"post", http.MethodPost, PathV2, 405, metav1.StatusReasonMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(t, h, tc.method, tc.target, nil)
			require.Equal(t, tc.code, w.Code)
			var st metav1.Status
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
			assert.Equal(t, "Status", st.Kind)
			assert.Equal(t, tc.reason, st.Reason)
			assert.EqualValues(t, tc.code, st.Code)
		})
	}

	custom := newTestHandler(t, WithNotFoundHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})))
	assert.Equal(t, http.StatusTeapot, do(t, custom, http.MethodGet, "/openapi/v3/apis/x/v1", nil).Code)
}

func TestOptionsRejectNil(t *testing.T) {
	for name, opt := range map[string]Option{
		"scheme": WithScheme(nil), "clock": WithClock(nil), "logger": WithLogger(nil), "notFound": WithNotFoundHandler(nil),
	} {
		_, err := NewHandler(testResources(), testInfo, opt)
		assert.Error(t, err, name)
	}
}
