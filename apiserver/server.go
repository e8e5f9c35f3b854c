package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/version"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/fieldmanager"
	"github.com/podkit/podkit/apiserver/printers"
	podscheme "github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/servicealloc"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/validation"
)

// DefaultMaxRequestBodyBytes caps request bodies like kube-apiserver (3 MiB).
const DefaultMaxRequestBodyBytes = 3 * 1024 * 1024

// Config holds the API server's collaborators and settings. Store is
// required; everything else has a default.
type Config struct {
	// Store persists every resource.
	Store storage.Store
	// Admission runs mutating admission (Admit) and validating admission
	// (Validate) around the object's own validation; nil admits everything
	// unchanged (validation still runs). An *admission.Chain fits.
	Admission Admission
	// AdmissionWatches keep what admission plugins cache from the store
	// (the webhook plugins' configurations: admission.Webhooks.Run) for
	// as long as the server runs: RunControllers runs each until its
	// context ends. They are kept apart from Admission so wrapping the
	// chain (the birth trace, a sidecar injector) cannot hide them.
	AdmissionWatches []func(ctx context.Context)
	// Resources served; nil means DefaultResources().
	Resources []*Resource
	// Validator validates objects; nil means validation.Default().
	Validator ObjectValidator
	// Fields tracks managedFields and performs server-side apply; nil
	// builds fieldmanager.New over the server's scheme.
	Fields *fieldmanager.Manager
	// Tables converts objects for kubectl get (as=Table); nil means the
	// kubectl columns of apiserver/printers.
	Tables TableConvertor
	// OpenAPI serves /openapi/v2 and /openapi/v3; nil serves 404 there.
	OpenAPI http.Handler
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics registers the server's Prometheus metrics; nil uses a new
	// private registry (still served at /metrics).
	Metrics prometheus.Registerer
	// Gatherer serves /metrics; defaults to the registry behind Metrics
	// when that is a *prometheus.Registry.
	Gatherer prometheus.Gatherer
	// Clock for timestamps; defaults to time.Now.
	Clock func() time.Time
	// MaxRequestBodyBytes defaults to DefaultMaxRequestBodyBytes.
	MaxRequestBodyBytes int64
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound concurrent
	// non-watch requests (429 beyond); defaults 400 and 200 like
	// kube-apiserver. Negative disables the limit.
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	// MinRequestTimeout: watches without timeoutSeconds end after a random
	// duration between this and twice this (default 30 min).
	MinRequestTimeout time.Duration
	// Version is served at /version.
	Version *version.Info
	// KubeletClient reaches nodes' kubelets for pods/log; nil means
	// DefaultKubeletClient(nil): plain HTTP to the node's address.
	KubeletClient KubeletClientFunc

	// Authenticator decides who is calling (apiserver/auth/authn builds
	// kube-apiserver's chain); unauthenticated requests get 401. Nil
	// treats every request as system:admin in system:masters, as before
	// authentication existed: for embedding and tests. In-process
	// components (internal/inproc) are trusted either way.
	Authenticator auth.Authenticator
	// TokenReviewer answers TokenReview (authentication.k8s.io/v1) with
	// the bearer-token authenticators; nil answers every review with
	// "not enabled".
	TokenReviewer auth.TokenAuthenticator
	// Authorizer decides whether an authenticated request may proceed
	// (apiserver/auth/authz.Union of the Node and RBAC authorizers is
	// kube-apiserver's default); requests it does not allow get 403 with
	// Kubernetes' message. Nil allows everything, for embedding and tests.
	// When it implements authz.Runner (RBAC, Node), RunControllers runs it.
	Authorizer auth.Authorizer
	// ServiceAccountIssuer signs TokenRequest tokens
	// (serviceaccounts/<name>/token); nil serves no such subresource.
	ServiceAccountIssuer *ServiceAccountIssuer
	// RootCA (PEM), when set, is published as the ConfigMap
	// kube-root-ca.crt (key ca.crt) in every namespace, where pods'
	// projected token volumes find it.
	RootCA []byte

	// ServiceClusterIPRange is the CIDR Services' cluster IPs come from,
	// as kube-apiserver's --service-cluster-ip-range; the zero value means
	// 10.96.0.0/12. Its first address is the `kubernetes` service's. The
	// cluster DNS address (10.96.0.10) is not reserved: it lies in the
	// range's lower, static band, which dynamic allocation uses last, and
	// the composition creates kube-dns with that explicit IP.
	ServiceClusterIPRange netip.Prefix
	// ServiceNodePortRange is where node ports come from
	// (--service-node-port-range); a zero Size means 30000-32767. The
	// default Validator checks nodePorts against it; pass the same range
	// to a Validator of your own (validation.WithNodePortRange).
	ServiceNodePortRange utilnet.PortRange
	// ServiceRepairInterval is how often RunControllers checks the
	// allocations against the stored Services (servicealloc.Repair);
	// default 3 minutes.
	ServiceRepairInterval time.Duration
	// AdvertiseAddress is the address the `kubernetes` service's
	// endpoints name (--advertise-address); default 127.0.0.1. Pods reach
	// the API server through 10.96.0.1 only if it is routable from them.
	AdvertiseAddress netip.Addr
	// AdvertisePort is the port of those endpoints and the service's
	// targetPort; 0 means the port Serve listens on (the `kubernetes`
	// service is then created once Serve starts).
	AdvertisePort int
	// KubernetesServiceInterval is how often the `kubernetes` service and
	// its endpoints are reconciled; default 10s, as kube-apiserver. A
	// deletion of one of them through the API reconciles at once.
	KubernetesServiceInterval time.Duration
	// KubernetesServiceLeaseTTL is how long an API server stays in the
	// `kubernetes` endpoints after its last renewal: each server keeps a
	// Lease in kube-system with its advertise address and port, renewed
	// every KubernetesServiceInterval, and the endpoints list every server
	// whose lease is live (kube-apiserver's lease endpoint reconciler). A
	// server stopping cleanly leaves at once. Default 15s, as
	// kube-apiserver; at least the interval plus a second.
	KubernetesServiceLeaseTTL time.Duration
	// Audit, when set with a Sink, writes the audit log (audit.go).
	Audit *Audit
}

// Admission is the admission chain as the REST handlers call it.
type Admission interface {
	Admit(ctx context.Context, a *admission.Attributes) error
	Validate(ctx context.Context, a *admission.Attributes) error
}

type noAdmission struct{}

func (noAdmission) Admit(context.Context, *admission.Attributes) error    { return nil }
func (noAdmission) Validate(context.Context, *admission.Attributes) error { return nil }

// TableConvertor turns an object or list into a metav1.Table.
type TableConvertor interface {
	ConvertToTable(ctx context.Context, obj runtime.Object, opts *metav1.TableOptions) (*metav1.Table, error)
}

// Server is a Kubernetes-compatible API server over a storage.Store.
type Server struct {
	cfg        Config
	log        *slog.Logger
	scheme     *runtime.Scheme
	codecs     serializer.CodecFactory
	jsonInfo   runtime.SerializerInfo
	mediaTypes []string
	store      storage.Store
	chain      Admission
	validator  ObjectValidator
	fields     *fieldmanager.Manager
	now        func() time.Time

	resources map[schema.GroupVersion]map[string]*Resource
	ordered   []*Resource
	groups    []schema.GroupVersion // discovery order

	metrics  *metrics
	encoded  *encodeCache
	events   storage.Store // events.k8s.io/v1 over the core events
	gatherer prometheus.Gatherer
	readOnly chan struct{}
	mutating chan struct{}
	handler  http.Handler
	kubelet  KubeletClientFunc // pods/log

	services      *servicealloc.Allocator
	advertisePort atomic.Int64  // the `kubernetes` service's targetPort; 0 until known
	kick          chan struct{} // reconcile the `kubernetes` service now
	controllers   atomic.Bool   // RunControllers is running

	fieldIndex sync.Map // structFieldKey → []int, nil when absent (strategy.go)
}

// New builds a server; call Bootstrap before serving to create the built-in
// namespaces.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("apiserver: Config.Store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.MaxRequestBodyBytes == 0 {
		cfg.MaxRequestBodyBytes = DefaultMaxRequestBodyBytes
	}
	if cfg.MaxRequestsInFlight == 0 {
		cfg.MaxRequestsInFlight = 400
	}
	if cfg.MaxMutatingRequestsInFlight == 0 {
		cfg.MaxMutatingRequestsInFlight = 200
	}
	if cfg.MinRequestTimeout == 0 {
		cfg.MinRequestTimeout = 30 * time.Minute
	}
	if cfg.Resources == nil {
		cfg.Resources = DefaultResources()
	}
	if cfg.Version == nil {
		cfg.Version = DefaultVersion()
	}
	if cfg.Tables == nil {
		p, err := printers.New(printers.WithClock(cfg.Clock))
		if err != nil {
			return nil, fmt.Errorf("apiserver: table printers: %w", err)
		}
		cfg.Tables = p
	}
	if cfg.ServiceNodePortRange.Size == 0 {
		cfg.ServiceNodePortRange = servicealloc.DefaultNodePortRange
	}
	if cfg.Validator == nil {
		v, err := validation.New(validation.WithNodePortRange(cfg.ServiceNodePortRange.Base, cfg.ServiceNodePortRange.Size))
		if err != nil {
			return nil, fmt.Errorf("apiserver: %w", err)
		}
		cfg.Validator = v
	}
	if !cfg.AdvertiseAddress.IsValid() {
		cfg.AdvertiseAddress = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	if cfg.KubernetesServiceInterval <= 0 {
		cfg.KubernetesServiceInterval = 10 * time.Second
	}
	if cfg.KubernetesServiceLeaseTTL <= 0 {
		cfg.KubernetesServiceLeaseTTL = max(15*time.Second, cfg.KubernetesServiceInterval+time.Second)
	}
	if cfg.Admission == nil {
		cfg.Admission = noAdmission{}
	}
	if cfg.KubeletClient == nil {
		cfg.KubeletClient = DefaultKubeletClient(nil)
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		scheme:    podscheme.New(),
		store:     cfg.Store,
		chain:     cfg.Admission,
		validator: cfg.Validator,
		now:       cfg.Clock,
		resources: map[schema.GroupVersion]map[string]*Resource{},
		ordered:   cfg.Resources,
		encoded:   newEncodeCache(4096),
		events:    newEventsStore(cfg.Store),
		kubelet:   cfg.KubeletClient,
		kick:      make(chan struct{}, 1),
	}
	s.advertisePort.Store(int64(cfg.AdvertisePort))
	services, err := servicealloc.New(servicealloc.Config{
		ClusterIPRange: cfg.ServiceClusterIPRange,
		NodePortRange:  cfg.ServiceNodePortRange,
		List:           s.listServices,
		Claims:         servicealloc.NewStoreClaims(cfg.Store, cfg.Clock),
		Logger:         cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	s.services = services
	s.codecs = podscheme.Codecs(s.scheme)
	s.fields = cfg.Fields
	if s.fields == nil {
		fm, err := fieldmanager.New(s.scheme, fieldmanager.WithClock(cfg.Clock), fieldmanager.WithLogger(cfg.Logger))
		if err != nil {
			return nil, fmt.Errorf("apiserver: field manager: %w", err)
		}
		s.fields = fm
	}
	for _, info := range s.codecs.SupportedMediaTypes() {
		s.mediaTypes = append(s.mediaTypes, info.MediaType)
		if info.MediaType == runtime.ContentTypeJSON {
			s.jsonInfo = info
		}
	}
	for _, r := range cfg.Resources {
		m := s.resources[r.GroupVersion]
		if m == nil {
			m = map[string]*Resource{}
			s.resources[r.GroupVersion] = m
			s.groups = append(s.groups, r.GroupVersion)
		}
		if _, dup := m[r.Resource]; dup {
			return nil, fmt.Errorf("apiserver: resource %s registered twice", r.GroupResource())
		}
		m[r.Resource] = r
	}
	reg := cfg.Metrics
	s.gatherer = cfg.Gatherer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg, s.gatherer = r, r
	} else if s.gatherer == nil {
		if g, ok := reg.(prometheus.Gatherer); ok {
			s.gatherer = g
		}
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("apiserver: registering metrics: %w", err)
	}
	s.metrics = m
	if cfg.MaxRequestsInFlight > 0 {
		s.readOnly = make(chan struct{}, cfg.MaxRequestsInFlight)
	}
	if cfg.MaxMutatingRequestsInFlight > 0 {
		s.mutating = make(chan struct{}, cfg.MaxMutatingRequestsInFlight)
	}
	s.handler = s.buildHandler()
	return s, nil
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Scheme returns the scheme the server encodes with.
func (s *Server) Scheme() *runtime.Scheme { return s.scheme }

// Serve serves HTTP on l until ctx is done, then shuts down gracefully.
// It runs RunControllers alongside, with the `kubernetes` service pointing
// at l's port unless Config.AdvertisePort names another.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	if tcp, ok := l.Addr().(*net.TCPAddr); ok {
		s.advertisePort.CompareAndSwap(0, int64(tcp.Port))
	}
	controllers := make(chan struct{})
	defer func() { <-controllers }()
	ctrlCtx, stopControllers := context.WithCancel(ctx)
	defer stopControllers()
	go func() {
		defer close(controllers)
		s.RunControllers(ctrlCtx)
	}()
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	return nil
}

// storeFor returns the store serving res: events.k8s.io/v1 events live
// with the core events, converted; everything else is stored as served.
func (s *Server) storeFor(res *Resource) storage.Store {
	if res.GroupVersion == gvEvents && res.Resource == "events" {
		return s.events
	}
	return s.store
}

// lookup finds the resource a request addresses.
func (s *Server) lookup(gv schema.GroupVersion, resource string) (*Resource, bool) {
	r, ok := s.resources[gv][resource]
	return r, ok
}

func (s *Server) buildHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/api", s.serveCoreVersions)
	mux.HandleFunc("/api/", s.serveAPI)
	mux.HandleFunc("/apis", s.serveGroups)
	mux.HandleFunc("/apis/", s.serveAPI)
	mux.HandleFunc("/version", s.serveVersion)
	mux.HandleFunc("/version/", s.serveVersion)
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		mux.HandleFunc(p, s.serveHealth)
		mux.HandleFunc(p+"/", s.serveHealth)
	}
	mux.Handle("/metrics", s.metricsHandler())
	if s.cfg.OpenAPI != nil {
		mux.Handle("/openapi/", s.cfg.OpenAPI)
		mux.Handle("/openapi/v2", s.cfg.OpenAPI)
	}
	mux.HandleFunc("/", s.serveRoot)
	return s.withRecovery(s.withAuthentication(s.withAudit(s.withImpersonation(s.withInflightLimit(s.withAuthorization(s.withAdmissionWarnings(s.withBodyLimit(mux))))))))
}

// serveAPI routes /api/... and /apis/... to discovery or a resource handler.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	parts := splitPath(r.URL.Path)
	switch {
	case len(parts) == 2 && parts[0] == "api":
		s.serveResourceList(w, r, schema.GroupVersion{Version: parts[1]})
		return
	case len(parts) == 2 && parts[0] == "apis":
		s.serveGroup(w, r, parts[1])
		return
	case len(parts) == 3 && parts[0] == "apis":
		s.serveResourceList(w, r, schema.GroupVersion{Group: parts[1], Version: parts[2]})
		return
	}
	info, ok := parseResourceParts(r.Method, parts, query(r))
	if !ok {
		s.writeError(w, r, notFoundPath(r))
		return
	}
	res, ok := s.lookup(info.GroupVersion, info.Resource)
	if !ok {
		s.writeError(w, r, notFoundPath(r))
		return
	}
	s.serveResource(w, r, res, info)
}

func (s *Server) serveRoot(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		s.writeError(w, r, notFoundPath(r))
		return
	}
	paths := []string{"/api", "/api/v1", "/apis", "/healthz", "/livez", "/metrics", "/openapi/v2", "/openapi/v3", "/readyz", "/version"}
	for _, gv := range s.groups {
		if gv.Group != "" {
			paths = append(paths, "/apis/"+gv.Group, "/apis/"+gv.String())
		}
	}
	s.writeJSON(w, http.StatusOK, &metav1.RootPaths{Paths: paths})
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if _, err := s.store.CurrentRevision(r.Context()); err != nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "[-]etcd failed: %v\nhealthz check failed\n", err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.URL.Query().Has("verbose") {
		name := strings.TrimPrefix(r.URL.Path, "/")
		fmt.Fprintf(w, "[+]ping ok\n[+]log ok\n[+]etcd ok\n%s check passed\n", strings.SplitN(name, "/", 2)[0])
		return
	}
	_, _ = w.Write([]byte("ok"))
}
