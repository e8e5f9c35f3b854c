package openapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"fmt"
	"sync"
	"time"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
)

// Document is one served OpenAPI document: its JSON, built eagerly, and its
// protobuf and gzip encodings, built on first use and then kept.
type Document struct {
	json     []byte
	etag     string
	modified time.Time

	toProto func([]byte) ([]byte, error)
	pb      lazy
	gzJSON  lazy
	gzPB    lazy
}

type lazy struct {
	once sync.Once
	b    []byte
	err  error
}

func (l *lazy) get(f func() ([]byte, error)) ([]byte, error) {
	l.once.Do(func() { l.b, l.err = f() })
	return l.b, l.err
}

func newDocument(json []byte, modified time.Time, toProto func([]byte) ([]byte, error)) *Document {
	return &Document{json: json, etag: computeETag(json), modified: modified, toProto: toProto}
}

// computeETag is kube-apiserver's entity tag and v3 hash: the upper-case
// hex SHA-512 of the JSON document.
func computeETag(data []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(data))
}

// JSON returns the document as JSON. The caller must not modify it.
func (d *Document) JSON() []byte { return d.json }

// ETag returns the unquoted entity tag, shared by every encoding of the
// document (responses vary by Accept).
func (d *Document) ETag() string { return d.etag }

// Protobuf returns the document as the gnostic protobuf message kubectl
// and client-go decode (openapi_v2.Document or openapi_v3.Document).
func (d *Document) Protobuf() ([]byte, error) {
	if d.toProto == nil {
		return nil, fmt.Errorf("openapi: document has no protobuf encoding")
	}
	return d.pb.get(func() ([]byte, error) { return d.toProto(d.json) })
}

func (d *Document) gzipped(pb bool) ([]byte, error) {
	if pb {
		return d.gzPB.get(func() ([]byte, error) {
			b, err := d.Protobuf()
			if err != nil {
				return nil, err
			}
			return gzipBytes(b)
		})
	}
	return d.gzJSON.get(func() ([]byte, error) { return gzipBytes(d.json) })
}

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, fmt.Errorf("openapi: gzip: %w", err)
	}
	if _, err := zw.Write(b); err != nil {
		return nil, fmt.Errorf("openapi: gzip: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("openapi: gzip: %w", err)
	}
	return buf.Bytes(), nil
}

// v2Proto converts a Swagger 2.0 JSON document to gnostic protobuf, as
// kube-apiserver does for /openapi/v2.
func v2Proto(j []byte) ([]byte, error) {
	doc, err := openapiv2.ParseDocument(j)
	if err != nil {
		return nil, fmt.Errorf("openapi: parsing v2 document for protobuf: %w", err)
	}
	b, err := proto.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding v2 protobuf: %w", err)
	}
	return b, nil
}

// v3Proto converts an OpenAPI 3.0 JSON document to gnostic protobuf.
func v3Proto(j []byte) ([]byte, error) {
	doc, err := openapiv3.ParseDocument(j)
	if err != nil {
		return nil, fmt.Errorf("openapi: parsing v3 document for protobuf: %w", err)
	}
	b, err := proto.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding v3 protobuf: %w", err)
	}
	return b, nil
}
