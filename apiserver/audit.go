package apiserver

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/podkit/podkit/apiserver/auth"
)

// Audit configures the audit log: step 2½ of the birth sequence, between
// authentication and authorization, where kube-apiserver records who asked
// for what and what they were answered. Every request the policy does not
// set to AuditNone becomes one JSON line on Sink, an audit.k8s.io/v1 Event
// at stage ResponseComplete (a watch's line is written when it ends), so
// tools that read Kubernetes audit logs read podkit's.
type Audit struct {
	// Sink receives one JSON line per audited request. Writes are
	// serialized; a failing sink is logged, never failing the request.
	Sink io.Writer
	// Policy picks each request's level; an AuditLevel is a policy that
	// gives every request that level. nil means AuditMetadata.
	Policy AuditPolicy
	// MaxBodyBytes caps the request and response bodies recorded at the
	// Request and RequestResponse levels (default 64 KiB); larger bodies
	// are left out of the event.
	MaxBodyBytes int
}

// AuditLevel is how much of a request is recorded, as Kubernetes' levels.
type AuditLevel string

// Audit levels.
const (
	// AuditNone records nothing.
	AuditNone AuditLevel = "None"
	// AuditMetadata records user, verb, resource, response code and times.
	AuditMetadata AuditLevel = "Metadata"
	// AuditRequest adds the request body.
	AuditRequest AuditLevel = "Request"
	// AuditRequestResponse adds the response body too (not for watches).
	AuditRequestResponse AuditLevel = "RequestResponse"
)

// ParseAuditLevel reads a level name (case-insensitive).
func ParseAuditLevel(s string) (AuditLevel, bool) {
	for _, l := range []AuditLevel{AuditNone, AuditMetadata, AuditRequest, AuditRequestResponse} {
		if strings.EqualFold(s, string(l)) {
			return l, true
		}
	}
	return "", false
}

// AuditPolicy decides the level of a request.
type AuditPolicy interface {
	Level(a *AuditAttributes) AuditLevel
}

// Level makes a fixed level a policy.
func (l AuditLevel) Level(*AuditAttributes) AuditLevel { return l }

// AuditAttributes describe a request for a policy.
type AuditAttributes struct {
	User            auth.User // nil when unauthenticated
	Verb            string    // get, list, watch, create, ... or the lower-case HTTP method
	ResourceRequest bool
	APIGroup        string
	Resource        string
	Subresource     string
	Namespace       string
	Name            string
	Path            string
}

// auditEvent is audit.k8s.io/v1 Event, the fields podkit fills.
type auditEvent struct {
	Kind                     string            `json:"kind"`
	APIVersion               string            `json:"apiVersion"`
	Level                    AuditLevel        `json:"level"`
	AuditID                  string            `json:"auditID"`
	Stage                    string            `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     auditUser         `json:"user"`
	SourceIPs                []string          `json:"sourceIPs,omitempty"`
	UserAgent                string            `json:"userAgent,omitempty"`
	ObjectRef                *auditObjectRef   `json:"objectRef,omitempty"`
	ResponseStatus           *metav1.Status    `json:"responseStatus,omitempty"`
	RequestObject            json.RawMessage   `json:"requestObject,omitempty"`
	ResponseObject           json.RawMessage   `json:"responseObject,omitempty"`
	RequestReceivedTimestamp metav1.MicroTime  `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime  `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

type auditUser struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

type auditObjectRef struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// auditor writes events to the sink.
type auditor struct {
	cfg Audit
	log *slog.Logger
	now func() time.Time

	// pb decodes protobuf bodies for the Request levels.
	pb runtime.Decoder

	mu     sync.Mutex
	failed bool // a sink error was logged already
}

// withAudit records every request the policy selects once its response is
// complete. It runs after authentication (the user comes from
// auth.UserFrom) and before impersonation and authorization, so denied
// requests are recorded too.
func (s *Server) withAudit(next http.Handler) http.Handler {
	if s.cfg.Audit == nil || s.cfg.Audit.Sink == nil {
		return next
	}
	a := &auditor{cfg: *s.cfg.Audit, log: s.log, now: s.cfg.Clock, pb: protobuf.NewSerializer(s.scheme, s.scheme)}
	if a.cfg.Policy == nil {
		a.cfg.Policy = AuditMetadata
	}
	if a.cfg.MaxBodyBytes <= 0 {
		a.cfg.MaxBodyBytes = 64 << 10
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received := a.now()
		attrs := auditAttributes(r)
		level := a.cfg.Policy.Level(attrs)
		if level == AuditNone || level == "" {
			next.ServeHTTP(w, r)
			return
		}
		id := string(uuid.NewUUID())
		w.Header().Set("Audit-Id", id)
		rec := &auditRecorder{ResponseWriter: w, code: http.StatusOK}
		var reqBody *cappedBuffer
		if level != AuditMetadata && r.Body != nil {
			reqBody = &cappedBuffer{max: a.cfg.MaxBodyBytes}
			r.Body = teeReadCloser{Reader: io.TeeReader(r.Body, reqBody), Closer: r.Body}
		}
		if level == AuditRequestResponse && attrs.Verb != "watch" {
			rec.body = &cappedBuffer{max: a.cfg.MaxBodyBytes}
		}
		completed := false
		defer func() {
			if !completed {
				// A panic on its way to the recovery filter: the
				// client gets a 500.
				rec.code = http.StatusInternalServerError
			}
			a.write(a.event(r, attrs, level, id, received, rec, reqBody))
		}()
		next.ServeHTTP(rec, r)
		completed = true
	})
}

// auditAttributes describes r for the policy.
func auditAttributes(r *http.Request) *AuditAttributes {
	a := &AuditAttributes{User: auth.UserFrom(r.Context()), Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	if info, ok := parseResourcePath(r.Method, r.URL.Path, r.URL.Query()); ok {
		a.ResourceRequest = true
		a.Verb, a.APIGroup, a.Resource = info.Verb, info.GroupVersion.Group, info.Resource
		a.Subresource, a.Namespace, a.Name = info.Subresource, info.Namespace, info.Name
	}
	return a
}

// event builds the Event of a completed request.
func (a *auditor) event(r *http.Request, attrs *AuditAttributes, level AuditLevel, id string, received time.Time, rec *auditRecorder, reqBody *cappedBuffer) *auditEvent {
	ev := &auditEvent{
		Kind: "Event", APIVersion: "audit.k8s.io/v1",
		Level: level, AuditID: id, Stage: "ResponseComplete",
		RequestURI: r.URL.RequestURI(), Verb: attrs.Verb,
		UserAgent:                r.UserAgent(),
		ResponseStatus:           &metav1.Status{Code: int32(rec.code)},
		RequestReceivedTimestamp: metav1.NewMicroTime(received),
		StageTimestamp:           metav1.NewMicroTime(a.now()),
	}
	if u := attrs.User; u != nil {
		ev.User = auditUser{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		ev.SourceIPs = []string{host}
	}
	if attrs.ResourceRequest {
		ref := &auditObjectRef{Resource: attrs.Resource, Namespace: attrs.Namespace, Name: attrs.Name,
			APIGroup: attrs.APIGroup, Subresource: attrs.Subresource}
		if parts := splitPath(r.URL.Path); len(parts) > 2 {
			if parts[0] == "api" {
				ref.APIVersion = parts[1]
			} else {
				ref.APIVersion = parts[2]
			}
		}
		ev.ObjectRef = ref
	}
	if rec.code >= 400 {
		ev.ResponseStatus.Status = metav1.StatusFailure
	} else {
		ev.ResponseStatus.Status = metav1.StatusSuccess
	}
	if reqBody != nil {
		ev.RequestObject = a.body(reqBody)
	}
	if rec.body != nil {
		ev.ResponseObject = a.body(rec.body)
	}
	return ev
}

// write appends one line to the sink.
func (a *auditor) write(ev *auditEvent) {
	line, err := json.Marshal(ev)
	if err != nil {
		a.log.Error("encoding audit event", "err", err)
		return
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.cfg.Sink.Write(line); err != nil {
		if !a.failed {
			a.log.Error("writing the audit log", "err", err)
			a.failed = true
		}
		return
	}
	a.failed = false
}

// auditRecorder notes the response code (and body, when recorded) and
// passes everything on, flushes included.
type auditRecorder struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
	body        *cappedBuffer
}

func (w *auditRecorder) WriteHeader(code int) {
	if !w.wroteHeader {
		w.code, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *auditRecorder) Write(b []byte) (int, error) {
	w.wroteHeader = true
	if w.body != nil {
		_, _ = w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *auditRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *auditRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// cappedBuffer keeps up to max bytes and remembers whether more came.
type cappedBuffer struct {
	buf      bytes.Buffer
	max      int
	overflow bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.overflow || b.buf.Len()+len(p) > b.max {
		b.overflow = true
		return len(p), nil
	}
	return b.buf.Write(p)
}

// body returns a recorded body as JSON: JSON as sent, protobuf decoded
// and re-encoded (as kube-apiserver records it); truncated bodies and
// other encodings are left out.
func (a *auditor) body(b *cappedBuffer) json.RawMessage {
	data := b.buf.Bytes()
	if b.overflow || len(data) == 0 {
		return nil
	}
	if bytes.HasPrefix(data, protobufMagic) && a.pb != nil {
		obj, _, err := a.pb.Decode(data, nil, nil)
		if err != nil {
			return nil
		}
		out, err := json.Marshal(obj)
		if err != nil {
			return nil
		}
		return out
	}
	if !json.Valid(data) {
		return nil
	}
	var out bytes.Buffer
	if err := json.Compact(&out, data); err != nil {
		return nil
	}
	return out.Bytes()
}

// protobufMagic starts Kubernetes' protobuf envelope.
var protobufMagic = []byte("k8s\x00")

type teeReadCloser struct {
	io.Reader
	io.Closer
}
