package apiserver

import (
	"fmt"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/defaults"
)

// Alternative representations a client may ask for with the as= parameter.
const (
	asTable       = "Table"
	asPartial     = "PartialObjectMetadata"
	asPartialList = "PartialObjectMetadataList"
)

// target is the negotiated response representation.
type target struct {
	info runtime.SerializerInfo
	as   string // "", asTable, asPartial, asPartialList
}

// contentType returns the Content-Type header for the target.
func (t target) contentType() string {
	if t.as == "" {
		return t.info.MediaType
	}
	return t.info.MediaType + ";as=" + t.as + ";v=v1;g=meta.k8s.io"
}

type acceptItem struct {
	mediaType string
	params    map[string]string
	q         float64
}

// parseAccept returns the Accept header's items, most preferred first.
func parseAccept(header string) []acceptItem {
	var items []acceptItem
	for _, part := range strings.Split(header, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			if v, err := strconv.ParseFloat(s, 64); err == nil {
				q = v
			}
		}
		if q <= 0 {
			continue
		}
		items = append(items, acceptItem{mediaType: mt, params: params, q: q})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].q > items[j].q })
	return items
}

// negotiate picks the response representation from the Accept header.
// allowAs lists which as= alternatives the endpoint can produce.
func (s *Server) negotiate(r *http.Request, allowAs ...string) (target, error) {
	header := r.Header.Get("Accept")
	if header == "" {
		return target{info: s.jsonInfo}, nil
	}
	if info, ok := s.plainAccept(header); ok {
		return target{info: info}, nil
	}
	for _, item := range parseAccept(header) {
		info, ok := s.serializerFor(item.mediaType)
		if !ok {
			continue
		}
		as := item.params["as"]
		if as != "" {
			if item.params["g"] != "meta.k8s.io" || (item.params["v"] != "v1" && item.params["v"] != "v1beta1") || !contains(allowAs, as) {
				continue
			}
			if as == asTable && info.MediaType == runtime.ContentTypeProtobuf {
				continue // Tables are served as JSON or YAML only, like kube-apiserver
			}
		}
		return target{info: info, as: as}, nil
	}
	return target{}, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", schema.GroupResource{}, "", fmt.Sprintf(
		"only the following media types are accepted: %s", strings.Join(s.mediaTypes, ", ")), 0, false)
}

// plainAccept is negotiate's answer, without parsing, for an Accept header
// of media types without parameters (as client-go sends it, e.g.
// "application/vnd.kubernetes.protobuf,application/json"): all have
// quality 1, so the first one served wins. ok is false when the header
// has parameters or names no media type served (the parser decides).
func (s *Server) plainAccept(header string) (runtime.SerializerInfo, bool) {
	if strings.IndexByte(header, ';') >= 0 {
		return runtime.SerializerInfo{}, false
	}
	for rest := header; rest != ""; {
		var item string
		item, rest, _ = strings.Cut(rest, ",")
		mt, ok := plainMediaType(item)
		if !ok {
			return runtime.SerializerInfo{}, false
		}
		if info, ok := s.serializerFor(mt); ok && mt != "" {
			return info, true
		}
	}
	return runtime.SerializerInfo{}, false
}

// plainMediaType is what mime.ParseMediaType makes of the media type of a
// value without parameters, when that is plain ASCII (lowercased,
// trimmed; "" for a blank value): a served media type found so is one
// the parser accepts, anything else is not served either way. ok is
// false for other bytes, which lowercasing may turn into ASCII.
func plainMediaType(v string) (string, bool) {
	upper := false
	for i := range len(v) {
		switch c := v[i]; {
		case c >= 0x80:
			return "", false
		case 'A' <= c && c <= 'Z':
			upper = true
		}
	}
	mt := strings.TrimSpace(v)
	if upper {
		mt = strings.ToLower(mt)
	}
	return mt, true
}

// serializerFor finds the serializer of a media type; wildcards mean JSON.
func (s *Server) serializerFor(mediaType string) (runtime.SerializerInfo, bool) {
	switch mediaType {
	case "*/*", "application/*", "":
		return s.jsonInfo, true
	}
	for _, info := range s.codecs.SupportedMediaTypes() {
		if info.MediaType == mediaType {
			return info, true
		}
	}
	return runtime.SerializerInfo{}, false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// encode serializes obj in group version gv (or the object's own group
// version for meta.k8s.io and unversioned types) for the target.
func (s *Server) encode(t target, obj runtime.Object, gv schema.GroupVersion) ([]byte, error) {
	data, err := s.encoded.encodeTo(s.encoderFor(t.info.Serializer, obj, gv), obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T as %s: %w", obj, t.info.MediaType, err)
	}
	return data, nil
}

func (s *Server) encoderFor(ser runtime.Encoder, obj runtime.Object, gv schema.GroupVersion) runtime.Encoder {
	if gvks, _, err := s.scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		for _, gvk := range gvks {
			if gvk.GroupVersion() == gv {
				return s.codecs.EncoderForVersion(ser, gv)
			}
		}
		return s.codecs.EncoderForVersion(ser, gvks[0].GroupVersion())
	}
	return s.codecs.EncoderForVersion(ser, gv)
}

// writeObject writes obj with status code to w in the target representation.
func (s *Server) writeObject(w http.ResponseWriter, r *http.Request, code int, t target, obj runtime.Object, gv schema.GroupVersion) {
	data, err := s.encode(t, obj, gv)
	if err != nil {
		s.writeError(w, r, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", t.contentType())
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(data)
	}
}

// writeError writes err as a metav1.Status in the client's preferred format.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := toStatus(err)
	t, nerr := s.negotiate(r)
	if nerr != nil {
		t = target{info: s.jsonInfo}
	}
	data, eerr := s.encode(t, status, schema.GroupVersion{Version: "v1"})
	if eerr != nil {
		s.log.Error("encoding error status", "err", eerr)
		http.Error(w, status.Message, int(status.Code))
		return
	}
	w.Header().Set("Content-Type", t.info.MediaType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if status.Details != nil && status.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(status.Details.RetryAfterSeconds)))
	}
	w.WriteHeader(int(status.Code))
	_, _ = w.Write(data)
}

// decodeBody decodes a request body into a new object of the resource. It
// honours the fieldValidation directive: Strict turns unknown or duplicate
// fields into a 400, Warn (the default) into Warning headers, Ignore drops
// them.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, body []byte, gvk schema.GroupVersionKind, into runtime.Object) (runtime.Object, error) {
	return s.decode(w, r, body, gvk, into, true)
}

// decodeRequest starts a create-only handler (reviews, token requests):
// it negotiates the response's media type, then reads the body and
// decodes it as decodeBody does.
func (s *Server) decodeRequest(w http.ResponseWriter, r *http.Request, gvk schema.GroupVersionKind, into runtime.Object) (target, runtime.Object, error) {
	t, err := s.negotiate(r)
	if err != nil {
		return target{}, nil, err
	}
	body, err := readBody(r)
	if err != nil {
		return target{}, nil, err
	}
	obj, err := s.decodeBody(w, r, body, gvk, into)
	if err != nil {
		return target{}, nil, err
	}
	return t, obj, nil
}

// decode is decodeBody; describe wraps decoding errors the way
// kube-apiserver words them for request bodies ("Pod in version "v1"
// cannot be handled as a Pod: ..."), which patch results do not get.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, body []byte, gvk schema.GroupVersionKind, into runtime.Object, describe bool) (runtime.Object, error) {
	mediaType := r.Header.Get("Content-Type")
	if mediaType == "" {
		mediaType = runtime.ContentTypeJSON
	}
	mt, plain := "", strings.IndexByte(mediaType, ';') < 0
	if plain {
		// Without parameters a served media type parses as itself; any
		// other value is unsupported either way.
		mt, plain = plainMediaType(mediaType)
		plain = plain && mt != ""
	}
	if !plain {
		var err error
		if mt, _, err = mime.ParseMediaType(mediaType); err != nil {
			return nil, s.unsupportedMediaType()
		}
	}
	info, ok := s.serializerFor(mt)
	if !ok || mt == "*/*" {
		return nil, s.unsupportedMediaType()
	}
	directive, err := fieldValidation(r)
	if err != nil {
		return nil, err
	}
	dec := info.Serializer
	if directive != "Ignore" && info.StrictSerializer != nil {
		dec = info.StrictSerializer
	}
	obj, actual, err := dec.Decode(body, &gvk, into)
	wrap := func(err error) error {
		if !describe {
			return apierrors.NewBadRequest(err.Error())
		}
		if actual != nil && actual.Kind != "" {
			return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", actual.Kind, actual.Version, gvk.Kind, err))
		}
		summary := string(body)
		if len(summary) > 30 {
			summary = summary[:30] + "..."
		}
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", gvk.Kind, err, summary))
	}
	if err != nil && runtime.IsStrictDecodingError(err) && obj != nil {
		if directive == "Strict" {
			return nil, wrap(err)
		}
		if sde, ok := err.(interface{ Errors() []error }); ok {
			for _, e := range sde.Errors() {
				addWarning(w, e.Error())
			}
		}
		err = nil
	}
	if err != nil {
		return nil, wrap(err)
	}
	if actual != nil && actual.GroupVersion() != gvk.GroupVersion() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)",
			actual.GroupVersion(), gvk.GroupVersion()))
	}
	if actual != nil && actual.Kind != gvk.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", actual.Kind, gvk.Kind))
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	// Kubernetes applies its defaults as part of decoding; so does podkit,
	// for request bodies and patch results alike.
	defaults.Default(obj)
	return obj, nil
}

// fieldValidation returns the request's fieldValidation directive.
func fieldValidation(r *http.Request) (string, error) {
	switch v := query(r).Get("fieldValidation"); v {
	case "", "Warn":
		return "Warn", nil
	case "Strict", "Ignore":
		return v, nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation parameter unsupported: %v; valid values are Ignore, Warn, Strict", v))
	}
}

// addWarning adds a Warning header the way kube-apiserver does.
func addWarning(w http.ResponseWriter, msg string) {
	w.Header().Add("Warning", "299 - "+strconv.Quote(msg))
}

func (s *Server) unsupportedMediaType() error {
	return newStatusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: "+strings.Join(s.mediaTypes, ", "), "")
}
