package dns

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/cni"
)

// Defaults of Config.
const (
	DefaultDomain         = "cluster.local"
	DefaultTTL            = 5 * time.Second
	DefaultForwardTimeout = 2 * time.Second
	// SchemaVersion is the Kubernetes DNS schema served at
	// dns-version.<zone> TXT.
	SchemaVersion = "1.1.0"
)

// ErrConfig is wrapped by New for an invalid Config.
var ErrConfig = errors.New("invalid dns config")

// ErrStarted is returned by a second Run.
var ErrStarted = errors.New("dns server already started")

// Config configures a Server. Client (or Informers) is required; Addr or
// Sockets says where to listen.
type Config struct {
	// Client reads Services and EndpointSlices through informers.
	Client kubernetes.Interface
	// Informers, if set, is the factory to take the Service and
	// EndpointSlice informers from (shared with other components); it must
	// not have started those two informers yet, since the server adds
	// indexers to them. Run starts it. Default: a new factory over Client.
	Informers informers.SharedInformerFactory
	// Domain is the cluster domain (default "cluster.local").
	Domain string
	// Upstreams are "ip:port" resolvers for names outside the cluster
	// zone, tried in turn. Empty: such questions are refused.
	Upstreams []string
	// Addr is the UDP and TCP listen address, e.g. "10.96.0.10:53" or
	// "127.0.0.1:0" (the same free port for both). Ignored when Sockets is
	// set.
	Addr string
	// Sockets are already open listeners (Listen, ListenIn); the Server
	// owns them from New on.
	Sockets *Sockets
	// TTL of every answer and the negative-caching TTL of the SOA
	// (default 5s, as CoreDNS's kubernetes plugin; at most 3600s).
	TTL time.Duration
	// ForwardTimeout bounds one exchange with one upstream (default 2s).
	ForwardTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registerer registers the server's metrics; nil keeps them
	// unregistered.
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() error {
	if c.Client == nil && c.Informers == nil {
		return fmt.Errorf("%w: Client is required", ErrConfig)
	}
	if c.Domain == "" {
		c.Domain = DefaultDomain
	}
	c.Domain = strings.ToLower(strings.TrimSuffix(c.Domain, "."))
	if errs := validation.IsDNS1123Subdomain(c.Domain); len(errs) > 0 {
		return fmt.Errorf("%w: domain %q: %s", ErrConfig, c.Domain, strings.Join(errs, "; "))
	}
	for _, u := range c.Upstreams {
		host, port, err := net.SplitHostPort(u)
		if err != nil || net.ParseIP(strings.SplitN(host, "%", 2)[0]) == nil || port == "" {
			return fmt.Errorf("%w: upstream %q is not ip:port", ErrConfig, u)
		}
	}
	if c.Sockets == nil && c.Addr == "" {
		return fmt.Errorf("%w: Addr or Sockets is required", ErrConfig)
	}
	if c.Sockets != nil && (c.Sockets.UDP == nil || c.Sockets.TCP == nil) {
		return fmt.Errorf("%w: Sockets needs both UDP and TCP", ErrConfig)
	}
	switch {
	case c.TTL == 0:
		c.TTL = DefaultTTL
	case c.TTL < 0 || c.TTL > time.Hour:
		return fmt.Errorf("%w: TTL %s outside 0..1h", ErrConfig, c.TTL)
	}
	if c.ForwardTimeout == 0 {
		c.ForwardTimeout = DefaultForwardTimeout
	} else if c.ForwardTimeout < 0 {
		return fmt.Errorf("%w: ForwardTimeout %s is negative", ErrConfig, c.ForwardTimeout)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// HostUpstreams returns the nameservers of a resolv.conf (the host's
// /etc/resolv.conf, or the kubelet's --resolv-conf) as "ip:53" upstreams,
// parsed the way the kubelet parses it.
func HostUpstreams(r io.Reader) ([]string, error) {
	rc, err := cni.ParseResolvConf(r)
	if err != nil {
		return nil, fmt.Errorf("host upstreams: %w", err)
	}
	var out []string
	for _, ns := range rc.Nameservers {
		ip := net.ParseIP(strings.SplitN(ns, "%", 2)[0])
		if ip == nil {
			continue
		}
		out = append(out, net.JoinHostPort(ns, "53"))
	}
	if len(out) == 0 {
		return nil, errors.New("host upstreams: resolv.conf names no nameserver")
	}
	return out, nil
}
