package apiserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/storage"
)

// The lease endpoint reconciler: which API servers the `kubernetes`
// service's endpoints name. Every API server keeps a coordination Lease in
// kube-system (podkit-apiserver-<address>-<port>, labelled
// LabelKubernetesEndpoint) carrying its advertise address and port,
// renewed on each reconcile (Config.KubernetesServiceInterval) and live
// for Config.KubernetesServiceLeaseTTL after its renewal. Each reconcile
// lists the leases, deletes the expired ones and writes the endpoints of
// the live ones, so every server writes the same endpoints and several
// servers on one store no longer overwrite each other.
// kube-apiserver's lease reconciler keeps the same records under
// /registry/masterleases/<ip> with an etcd TTL; podkit's stores have no
// TTL, so expiry is read from the lease's renewTime, and a server may
// share an address with another on a different port (they key by both).
// A server stopping cleanly deletes its lease and rewrites the endpoints
// without itself (leaveKubernetesEndpoints).

// LabelKubernetesEndpoint marks the Leases of the API servers behind the
// `kubernetes` service.
const LabelKubernetesEndpoint = "apiserver.podkit.dev/kubernetes-endpoint"

// Annotations of those Leases: the advertise address and port.
const (
	annotationAdvertiseAddress = "apiserver.podkit.dev/advertise-address"
	annotationAdvertisePort    = "apiserver.podkit.dev/advertise-port"
)

var leasesGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// apiEndpoint is one API server as the `kubernetes` endpoints name it.
type apiEndpoint struct {
	addr netip.Addr
	port int32
}

func (e apiEndpoint) String() string {
	return net.JoinHostPort(e.addr.String(), strconv.Itoa(int(e.port)))
}

// compare orders endpoints IPv4 first, then by port, then by address.
func (e apiEndpoint) compare(o apiEndpoint) int {
	if c := cmp.Compare(b2i(e.addr.Is6()), b2i(o.addr.Is6())); c != 0 {
		return c
	}
	if c := cmp.Compare(e.port, o.port); c != 0 {
		return c
	}
	return e.addr.Compare(o.addr)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// leaseName names an API server's lease: a DNS subdomain from its
// address and port.
func leaseName(e apiEndpoint) string {
	return "podkit-apiserver-" + strings.ReplaceAll(e.addr.String(), ":", "-") + "-" + strconv.Itoa(int(e.port))
}

func (s *Server) leaseKey(name string) string {
	if res, ok := s.lookup(gvCoordinate, "leases"); ok {
		return key(res, metav1.NamespaceSystem, name)
	}
	return storage.Key(leasesGR, metav1.NamespaceSystem, name)
}

// renewKubernetesLease creates or renews this server's lease.
func (s *Server) renewKubernetesLease(ctx context.Context, self apiEndpoint) error {
	now := metav1.NewMicroTime(s.now())
	secs := int32(math.Ceil(s.cfg.KubernetesServiceLeaseTTL.Seconds()))
	k := s.leaseKey(leaseName(self))
	_, err := s.store.Update(ctx, k, func(cur runtime.Object) (runtime.Object, error) {
		l, ok := cur.(*coordinationv1.Lease)
		if !ok {
			return nil, fmt.Errorf("%s holds a %T", k, cur)
		}
		l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &now, &secs
		return l, nil
	})
	if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	holder := self.String()
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: leaseName(self),
			Labels: map[string]string{LabelKubernetesEndpoint: "true"},
			Annotations: map[string]string{annotationAdvertiseAddress: self.addr.String(),
				annotationAdvertisePort: strconv.Itoa(int(self.port))}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
	}
	if res, ok := s.lookup(gvCoordinate, "leases"); ok {
		s.prepareForCreate(res, l)
	}
	if _, err := s.store.Create(ctx, k, l); err != nil && !errors.Is(err, storage.ErrExists) {
		return err
	}
	return nil
}

// leaseEndpoint reads a live lease's API server; ok is false for leases
// that are not the reconciler's or have expired.
func (s *Server) leaseEndpoint(l *coordinationv1.Lease, now time.Time) (apiEndpoint, bool, bool) {
	if l.Labels[LabelKubernetesEndpoint] != "true" {
		return apiEndpoint{}, false, false
	}
	addr, err := netip.ParseAddr(l.Annotations[annotationAdvertiseAddress])
	port, perr := strconv.ParseInt(l.Annotations[annotationAdvertisePort], 10, 32)
	if err != nil || perr != nil || port < 1 || port > 65535 {
		return apiEndpoint{}, false, false
	}
	renewed := l.Spec.RenewTime
	if renewed == nil {
		renewed = l.Spec.AcquireTime
	}
	ttl := s.cfg.KubernetesServiceLeaseTTL
	if l.Spec.LeaseDurationSeconds != nil {
		ttl = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	expired := renewed == nil || !now.Before(renewed.Add(ttl))
	return apiEndpoint{addr: addr.Unmap(), port: int32(port)}, !expired, expired
}

// liveAPIServers lists the API servers whose lease is live, sorted, with
// self added unless it is the zero endpoint (a server leaving). Expired
// leases are deleted, provided nobody renewed them meanwhile.
func (s *Server) liveAPIServers(ctx context.Context, self apiEndpoint) ([]apiEndpoint, error) {
	page, err := s.store.List(ctx, s.leaseKey(""), storage.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing API server leases: %w", err)
	}
	now := s.now()
	var live []apiEndpoint
	if self.addr.IsValid() {
		live = append(live, self)
	}
	for _, obj := range page.Items {
		l, ok := obj.(*coordinationv1.Lease)
		if !ok {
			continue
		}
		e, isLive, expired := s.leaseEndpoint(l, now)
		switch {
		case isLive && !slices.Contains(live, e):
			live = append(live, e)
		case expired:
			renewed := l.Spec.RenewTime
			_, err := s.store.Delete(ctx, s.leaseKey(l.Name), func(cur runtime.Object) error {
				if c, ok := cur.(*coordinationv1.Lease); !ok || !c.Spec.RenewTime.Equal(renewed) {
					return errNoop{cur: cur}
				}
				return nil
			})
			var noop errNoop
			if err != nil && !errors.Is(err, storage.ErrNotFound) && !errors.As(err, &noop) {
				return nil, fmt.Errorf("deleting expired lease %s: %w", l.Name, err)
			}
			if err == nil {
				s.log.Info("an API server's lease expired: removing it from the kubernetes endpoints", "apiserver", e)
			}
		}
	}
	slices.SortFunc(live, apiEndpoint.compare)
	return live, nil
}

// leaveKubernetesEndpoints deletes this server's lease and rewrites the
// endpoints without it: a clean shutdown, so clients stop being sent to a
// server that is gone without waiting for the lease to expire.
func (s *Server) leaveKubernetesEndpoints(ctx context.Context) {
	port := int32(s.advertisePort.Load())
	if port == 0 {
		return
	}
	self := apiEndpoint{addr: s.cfg.AdvertiseAddress.Unmap(), port: port}
	if _, err := s.store.Delete(ctx, s.leaseKey(leaseName(self)), nil); err != nil && !errors.Is(err, storage.ErrNotFound) {
		s.log.Warn("deleting this API server's lease", "err", err)
		return
	}
	live, err := s.liveAPIServers(ctx, apiEndpoint{})
	if err == nil {
		err = s.ensureKubernetesEndpoints(ctx, live)
	}
	if err == nil {
		err = s.ensureKubernetesEndpointSlices(ctx, live)
	}
	if err != nil {
		s.log.Warn("removing this API server from the kubernetes endpoints", "err", err)
		return
	}
	s.log.Info("removed this API server from the kubernetes endpoints", "apiserver", self)
}
