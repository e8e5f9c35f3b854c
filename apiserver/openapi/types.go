package openapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// ErrInvalidResource is wrapped by every error about a malformed Resource or
// Subresource given to NewV2, NewV3 or NewHandler.
var ErrInvalidResource = errors.New("invalid openapi resource")

// ErrUnsupportedType is wrapped when a Go type cannot be described in
// OpenAPI (a map with non-string keys, a channel, a function).
var ErrUnsupportedType = errors.New("go type has no openapi representation")

// Resource describes one REST resource the server serves, the way discovery
// describes it, plus the Go types of its objects.
type Resource struct {
	// GroupVersionKind of the resource's objects, e.g. apps/v1 Deployment.
	GroupVersionKind schema.GroupVersionKind
	// Resource is the lower-case plural: "deployments".
	Resource string
	// Namespaced resources get /namespaces/{namespace}/ paths and an
	// all-namespaces list path.
	Namespaced bool
	// Verbs as discovery lists them: get, list, watch, create, update, patch,
	// delete, deletecollection. Verbs without a REST operation of their own
	// (watch is a parameter of list; proxy, bind, escalate, use, impersonate)
	// are accepted and ignored.
	Verbs []string
	// Object is an empty object of the resource's Go type, e.g. &corev1.Pod{}.
	Object runtime.Object
	// List is an empty list object, e.g. &corev1.PodList{}; required when
	// Verbs has list.
	List runtime.Object
	// DeleteReturnsObject marks resources whose DELETE answers with the
	// deleted object (pods) rather than a Status.
	DeleteReturnsObject bool
	// Subresources served under /{name}/<subresource>.
	Subresources []Subresource
}

// Subresource describes an object-valued subresource such as status, scale,
// binding or finalize. Streaming and connect subresources (log, exec,
// attach, portforward, proxy) are not described.
type Subresource struct {
	// Name is the path segment: "status", "scale", "binding".
	Name string
	// GroupVersionKind of the subresource's object. Empty means the parent's
	// (status, finalize); scale is autoscaling/v1 Scale, binding v1 Binding.
	GroupVersionKind schema.GroupVersionKind
	// Object is an empty object of the subresource's Go type. Nil means the
	// parent's Object.
	Object runtime.Object
	// Verbs: get, update, patch, create.
	Verbs []string
}

// Info is the document's info object.
type Info struct {
	// Title defaults to "Kubernetes".
	Title string
	// Version is the server's version, e.g. "v1.33.0"; default "unversioned".
	Version string
}

// Option customises document generation and serving.
type Option func(*config) error

type config struct {
	scheme     *runtime.Scheme
	merge      *smdschema.Schema
	mergeSet   bool
	now        func() time.Time
	logger     *slog.Logger
	notFound   http.Handler
	noDiscover bool
}

// WithScheme adds, to every definition whose Go type is registered in s,
// the x-kubernetes-group-version-kind entries of all its registrations
// (like kube-apiserver does for DeleteOptions, Status and friends). Without
// it only the kinds named by the resources carry the extension.
func WithScheme(s *runtime.Scheme) Option {
	return func(c *config) error {
		if s == nil {
			return fmt.Errorf("openapi: WithScheme: nil scheme")
		}
		c.scheme = s
		return nil
	}
}

// WithMergeSchema sets the structured-merge-diff schema from which the
// x-kubernetes-list-type, x-kubernetes-list-map-keys and
// x-kubernetes-map-type extensions are taken. The default is the schema
// client-go ships for apply configurations (parsed once per process, about
// 60 ms). Passing nil leaves those extensions out.
func WithMergeSchema(s *smdschema.Schema) Option {
	return func(c *config) error {
		c.merge = s
		c.mergeSet = true
		return nil
	}
}

// WithClock sets the clock used for Last-Modified. Default time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return fmt.Errorf("openapi: WithClock: nil clock")
		}
		c.now = now
		return nil
	}
}

// WithLogger sets the logger for serving errors. Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("openapi: WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithNotFoundHandler sets the handler for paths the Handler does not serve
// (anything outside /openapi/v2 and /openapi/v3) and unknown group versions.
// The default answers 404 with a metav1.Status body, as kube-apiserver does.
func WithNotFoundHandler(h http.Handler) Option {
	return func(c *config) error {
		if h == nil {
			return fmt.Errorf("openapi: WithNotFoundHandler: nil handler")
		}
		c.notFound = h
		return nil
	}
}

// WithoutDiscoveryPaths leaves out the discovery operations (GET /api/,
// /api/v1/, /apis/, /apis/<group>/, /apis/<group>/<version>/) and the v3
// documents "api", "apis" and "apis/<group>" that hold them.
func WithoutDiscoveryPaths() Option {
	return func(c *config) error {
		c.noDiscover = true
		return nil
	}
}

func newConfig(opts []Option) (*config, error) {
	c := &config{now: time.Now, logger: slog.Default()}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Verbs with a REST operation of their own.
const (
	verbGet              = "get"
	verbList             = "list"
	verbCreate           = "create"
	verbUpdate           = "update"
	verbPatch            = "patch"
	verbDelete           = "delete"
	verbDeleteCollection = "deletecollection"
)

// served is a validated Resource with its Go types resolved.
type served struct {
	Resource
	objType  reflect.Type
	listType reflect.Type
	listGVK  schema.GroupVersionKind
	verbs    map[string]bool
	subs     []servedSub
}

type servedSub struct {
	name    string
	gvk     schema.GroupVersionKind
	objType reflect.Type
	verbs   map[string]bool
}

func structType(obj runtime.Object) (reflect.Type, error) {
	t := reflect.TypeOf(obj)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct || t.Elem().Name() == "" {
		return nil, fmt.Errorf("object %T is not a pointer to a named struct: %w", obj, ErrInvalidResource)
	}
	return t.Elem(), nil
}

func verbSet(verbs []string) map[string]bool {
	m := make(map[string]bool, len(verbs))
	for _, v := range verbs {
		m[v] = true
	}
	return m
}

func validate(in []Resource) ([]*served, error) {
	out := make([]*served, 0, len(in))
	seen := map[string]bool{}
	for i := range in {
		r := &served{Resource: in[i]}
		gvk := r.GroupVersionKind
		if gvk.Version == "" || gvk.Kind == "" || r.Resource.Resource == "" {
			return nil, fmt.Errorf("resource %d (%q, %v): version, kind and plural are required: %w", i, r.Resource.Resource, gvk, ErrInvalidResource)
		}
		key := gvk.GroupVersion().String() + "/" + r.Resource.Resource
		if seen[key] {
			return nil, fmt.Errorf("resource %s listed twice: %w", key, ErrInvalidResource)
		}
		seen[key] = true
		var err error
		if r.objType, err = structType(r.Object); err != nil {
			return nil, fmt.Errorf("resource %s: %w", key, err)
		}
		r.verbs = verbSet(r.Verbs)
		if r.List != nil {
			if r.listType, err = structType(r.List); err != nil {
				return nil, fmt.Errorf("resource %s list: %w", key, err)
			}
			r.listGVK = gvk.GroupVersion().WithKind(r.listType.Name())
		} else if r.verbs[verbList] {
			return nil, fmt.Errorf("resource %s has verb list but no List object: %w", key, ErrInvalidResource)
		}
		subSeen := map[string]bool{}
		for _, s := range r.Subresources {
			if s.Name == "" || subSeen[s.Name] {
				return nil, fmt.Errorf("resource %s: subresource name %q empty or repeated: %w", key, s.Name, ErrInvalidResource)
			}
			subSeen[s.Name] = true
			sr := servedSub{name: s.Name, gvk: s.GroupVersionKind, objType: r.objType, verbs: verbSet(s.Verbs)}
			if sr.gvk.Empty() {
				sr.gvk = gvk
			} else if sr.gvk.Version == "" || sr.gvk.Kind == "" {
				return nil, fmt.Errorf("resource %s subresource %s: kind %v lacks version or kind: %w", key, s.Name, sr.gvk, ErrInvalidResource)
			}
			if s.Object != nil {
				if sr.objType, err = structType(s.Object); err != nil {
					return nil, fmt.Errorf("resource %s subresource %s: %w", key, s.Name, err)
				}
			}
			r.subs = append(r.subs, sr)
		}
		out = append(out, r)
	}
	return out, nil
}
