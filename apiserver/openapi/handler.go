package openapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Paths the Handler serves.
const (
	PathV2 = "/openapi/v2"
	PathV3 = "/openapi/v3"
)

// Handler serves /openapi/v2, /openapi/v3 and /openapi/v3/<group version>
// like kube-apiserver: content negotiation by Accept (JSON or gnostic
// protobuf), an ETag with If-None-Match answered by 304, gzip when the
// client accepts it, and for hashed v3 URLs a redirect when the hash is
// stale and immutable caching when it is current.
type Handler struct {
	v2  *Document
	v3  *V3
	cfg *config
}

var _ http.Handler = (*Handler)(nil)

// NewHandler builds the v2 and v3 documents for the resources and returns
// a handler serving them. The documents are built here, once; protobuf and
// gzip encodings are built on first request.
func NewHandler(resources []Resource, info Info, opts ...Option) (*Handler, error) {
	m, err := newModel(resources, info, opts)
	if err != nil {
		return nil, err
	}
	v2, err := m.v2()
	if err != nil {
		return nil, err
	}
	v3, err := m.v3()
	if err != nil {
		return nil, err
	}
	return &Handler{v2: v2, v3: v3, cfg: m.cfg}, nil
}

// V2 returns the Swagger 2.0 document.
func (h *Handler) V2() *Document { return h.v2 }

// V3 returns the OpenAPI 3.0 documents.
func (h *Handler) V3() *V3 { return h.v3 }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p != PathV2 && p != PathV3 && !strings.HasPrefix(p, PathV3+"/") {
		h.notFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			"the server does not allow this method on the requested resource")
		return
	}
	switch {
	case p == PathV2:
		h.serveNegotiated(w, r, h.v2, v2Offers)
	case p == PathV3:
		h.serve(w, r, h.v3.discovery, false, mimeJSON)
	default:
		h.serveGroupVersion(w, r, strings.TrimPrefix(p, PathV3+"/"))
	}
}

func (h *Handler) serveGroupVersion(w http.ResponseWriter, r *http.Request, name string) {
	d, ok := h.v3.docs[name]
	if !ok {
		h.notFound(w, r)
		return
	}
	if hash := r.URL.Query().Get("hash"); hash != "" {
		if hash != d.etag {
			// A stale hash: send the client to the current document.
			http.Redirect(w, r, serverRelativeURL(name, d.etag), http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", h.cfg.now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
	}
	h.serveNegotiated(w, r, d, v3Offers)
}

func (h *Handler) serveNegotiated(w http.ResponseWriter, r *http.Request, d *Document, offers []offer) {
	w.Header().Add(headerVary, headerAccept)
	o, ok := negotiate(r.Header.Get(headerAccept), offers)
	if !ok {
		writeStatus(w, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			"only the following media types are accepted: "+offerList(offers))
		return
	}
	h.serve(w, r, d, o.protobuf, o.returned)
}

func offerList(offers []offer) string {
	names := make([]string, len(offers))
	for i, o := range offers {
		names[i] = o.mediaType
	}
	return strings.Join(names, ", ")
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, d *Document, protobuf bool, contentType string) {
	body := d.json
	var err error
	if protobuf {
		if body, err = d.Protobuf(); err != nil {
			h.internalError(w, r, err)
			return
		}
	}
	w.Header().Add(headerVary, headerAcceptE)
	if acceptsGzip(r.Header.Get(headerAcceptE)) {
		if body, err = d.gzipped(protobuf); err != nil {
			h.internalError(w, r, err)
			return
		}
		w.Header().Set(headerEncode, "gzip")
	}
	w.Header().Set(headerCType, contentType)
	w.Header().Set(headerETag, `"`+d.etag+`"`)
	http.ServeContent(w, r, "", d.modified, bytes.NewReader(body))
}

func (h *Handler) internalError(w http.ResponseWriter, r *http.Request, err error) {
	h.cfg.logger.ErrorContext(r.Context(), "serving openapi document", "path", r.URL.Path, "error", err)
	writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "openapi document unavailable")
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	if h.cfg.notFound != nil {
		h.cfg.notFound.ServeHTTP(w, r)
		return
	}
	writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
}

// writeStatus answers with a metav1.Status, the error body Kubernetes
// clients expect.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(code),
		Details: &metav1.StatusDetails{},
	}
	b, _ := json.Marshal(st) // a Status always encodes
	w.Header().Del(headerEncode)
	w.Header().Del(headerETag)
	w.Header().Set(headerCType, mimeJSON)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
