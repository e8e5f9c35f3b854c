package servicealloc

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/podkit/podkit/apiserver/storage"
)

// Where StoreClaims keeps its records, and how it marks them.
var (
	// IPAddressesResource: one networking.k8s.io/v1 IPAddress per cluster
	// IP, named by the address, as Kubernetes' MultiCIDRServiceAllocator
	// stores them (/registry/networking.k8s.io/ipaddresses/10.96.0.1).
	IPAddressesResource = schema.GroupResource{Group: "networking.k8s.io", Resource: "ipaddresses"}
	// NodePortsResource: one core/v1 RangeAllocation per node port, named
	// by the port (/registry/podkit.dev/servicenodeports/30080).
	// Kubernetes has no per-port object (it compare-and-swaps one bitmap
	// snapshot); a record per port makes node ports as race-free as IPs
	// with the same create-if-absent.
	NodePortsResource = schema.GroupResource{Group: "podkit.dev", Resource: "servicenodeports"}
)

const (
	// ManagedBy is the networking.k8s.io/managed-by label value of the
	// records StoreClaims writes: Kubernetes' IP allocator's.
	ManagedBy = "ipallocator.k8s.io"
	// nodePortOwnerAnnotation names the Service (namespace/name) holding a
	// node port record.
	nodePortOwnerAnnotation = "podkit.dev/service"
)

// StoreClaims implements Claims over a storage.Store shared by the API
// servers (etcd for several, any store for one): a claim is a storage
// Create, which fails with ErrExists when the record is there, and a
// release a Delete whose precondition checks the record is still the
// claim's.
type StoreClaims struct {
	store storage.Store
	now   func() time.Time
}

var _ Claims = (*StoreClaims)(nil)

// NewStoreClaims returns Claims kept in st; clock (nil: time.Now) stamps
// the records' creationTimestamp.
func NewStoreClaims(st storage.Store, clock func() time.Time) *StoreClaims {
	if clock == nil {
		clock = time.Now
	}
	return &StoreClaims{store: st, now: clock}
}

func ipKey(ip netip.Addr) string { return storage.Key(IPAddressesResource, "", ip.String()) }
func portKey(port int) string    { return storage.Key(NodePortsResource, "", strconv.Itoa(port)) }
func (c *StoreClaims) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, UID: uuid.NewUUID(), CreationTimestamp: metav1.NewTime(c.now()),
		Labels: map[string]string{networkingv1.LabelManagedBy: ManagedBy}}
}

// ClaimIP creates ip's IPAddress, its parentRef naming owner.
func (c *StoreClaims) ClaimIP(ctx context.Context, ip netip.Addr, owner types.NamespacedName) error {
	obj := &networkingv1.IPAddress{ObjectMeta: c.meta(ip.String()),
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: owner.Namespace, Name: owner.Name}}}
	family := corev1.IPv4Protocol
	if ip.Is6() {
		family = corev1.IPv6Protocol
	}
	obj.Labels[networkingv1.LabelIPAddressFamily] = string(family)
	return c.create(ctx, ipKey(ip), obj, ErrIPAllocated)
}

// ClaimPort creates the port's record, annotated with owner.
func (c *StoreClaims) ClaimPort(ctx context.Context, port int, owner types.NamespacedName) error {
	obj := &corev1.RangeAllocation{ObjectMeta: c.meta(strconv.Itoa(port)), Range: fmt.Sprintf("%d-%d", port, port)}
	obj.Annotations = map[string]string{nodePortOwnerAnnotation: owner.String()}
	return c.create(ctx, portKey(port), obj, ErrPortAllocated)
}

func (c *StoreClaims) create(ctx context.Context, key string, obj runtime.Object, taken error) error {
	_, err := c.store.Create(ctx, key, obj)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrExists):
		return taken
	default:
		return fmt.Errorf("servicealloc: recording %s: %w", key, err)
	}
}

// ReleaseIP deletes ip's IPAddress if it is still cl's.
func (c *StoreClaims) ReleaseIP(ctx context.Context, ip netip.Addr, cl Claim) error {
	return c.release(ctx, ipKey(ip), cl)
}

// ReleasePort deletes the port's record if it is still cl's.
func (c *StoreClaims) ReleasePort(ctx context.Context, port int, cl Claim) error {
	return c.release(ctx, portKey(port), cl)
}

var errNotTheClaim = errors.New("record held by another claim")

func (c *StoreClaims) release(ctx context.Context, key string, cl Claim) error {
	_, err := c.store.Delete(ctx, key, func(cur runtime.Object) error {
		have, ok := claimOf(cur)
		if !ok || have.Owner != cl.Owner || (cl.ID != "" && have.ID != cl.ID) {
			return errNotTheClaim
		}
		return nil
	})
	if err == nil || errors.Is(err, storage.ErrNotFound) || errors.Is(err, errNotTheClaim) {
		return nil
	}
	return fmt.Errorf("servicealloc: releasing %s: %w", key, err)
}

// List reads every IPAddress and node port record. IPAddresses another
// writer created (no Service parent) are listed with an empty owner: their
// address is taken all the same.
func (c *StoreClaims) List(ctx context.Context) (*ClaimSet, error) {
	set := &ClaimSet{IPs: map[netip.Addr]Claim{}, Ports: map[int]Claim{}}
	err := c.list(ctx, storage.Prefix(IPAddressesResource), func(obj runtime.Object) {
		m, ok := obj.(*networkingv1.IPAddress)
		if !ok {
			return
		}
		if ip, err := netip.ParseAddr(m.Name); err == nil {
			set.IPs[ip.Unmap()] = listed(m)
		}
	})
	if err != nil {
		return nil, err
	}
	err = c.list(ctx, storage.Prefix(NodePortsResource), func(obj runtime.Object) {
		m, ok := obj.(*corev1.RangeAllocation)
		if !ok {
			return
		}
		if p, err := strconv.Atoi(m.Name); err == nil {
			set.Ports[p] = listed(m)
		}
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

func (c *StoreClaims) list(ctx context.Context, prefix string, each func(runtime.Object)) error {
	opts := storage.ListOptions{ReadOnly: true, Limit: 1000}
	for {
		page, err := c.store.List(ctx, prefix, opts)
		if err != nil {
			return fmt.Errorf("servicealloc: listing %s: %w", prefix, err)
		}
		for _, obj := range page.Items {
			each(obj)
		}
		if page.Continue == "" {
			return nil
		}
		opts.Continue = page.Continue
	}
}

// listed is the Claim of a listed record: one this package did not write
// has no owner, which Repair never releases.
func listed(obj runtime.Object) Claim {
	cl, ok := claimOf(obj)
	if !ok {
		cl.Owner = types.NamespacedName{}
	}
	return cl
}

// claimOf reads the owner and ID of a record; ok is false for records this
// package did not write (they are never released by it).
func claimOf(obj runtime.Object) (Claim, bool) {
	switch o := obj.(type) {
	case *networkingv1.IPAddress:
		cl := Claim{ID: string(o.UID)}
		if ref := o.Spec.ParentRef; ref != nil && ref.Group == "" && ref.Resource == "services" {
			cl.Owner = ownerOf(ref.Namespace, ref.Name)
		}
		return cl, o.Labels[networkingv1.LabelManagedBy] == ManagedBy && cl.Owner.Name != ""
	case *corev1.RangeAllocation:
		cl := Claim{ID: string(o.UID)}
		if ns, name, ok := strings.Cut(o.Annotations[nodePortOwnerAnnotation], "/"); ok {
			cl.Owner = ownerOf(ns, name)
		}
		return cl, o.Labels[networkingv1.LabelManagedBy] == ManagedBy && cl.Owner.Name != ""
	}
	return Claim{}, false
}
