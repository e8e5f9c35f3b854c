package servicealloc

import (
	"context"
	"net/netip"

	"k8s.io/apimachinery/pkg/types"
)

// Claims records the allocated values in a store shared by every API
// server of a cluster, one record per value: claiming a value is an atomic
// create-if-absent of its record, so two API servers can never both hold
// it. It is the arbiter of allocation when set (Config.Claims); the
// in-memory ranges are then a cache of hints for dynamic picks.
// StoreClaims implements it over a storage.Store.
type Claims interface {
	// ClaimIP records ip as held by owner: ErrIPAllocated when a record
	// exists already, whoever holds it.
	ClaimIP(ctx context.Context, ip netip.Addr, owner types.NamespacedName) error
	// ClaimPort records a node port as held by owner: ErrPortAllocated
	// when a record exists already.
	ClaimPort(ctx context.Context, port int, owner types.NamespacedName) error
	// ReleaseIP removes ip's record if it is still the one c describes
	// (same owner, and same ID when c.ID is set); nil when it is gone or
	// held by another.
	ReleaseIP(ctx context.Context, ip netip.Addr, c Claim) error
	// ReleasePort is ReleaseIP for a node port.
	ReleasePort(ctx context.Context, port int, c Claim) error
	// List returns every record.
	List(ctx context.Context) (*ClaimSet, error)
}

// Claim describes one record of Claims.
type Claim struct {
	// Owner is the Service holding the value.
	Owner types.NamespacedName
	// ID identifies this record (its UID): a value released and claimed
	// again has a new one.
	ID string
}

// ClaimSet is every record of Claims, by value.
type ClaimSet struct {
	IPs   map[netip.Addr]Claim
	Ports map[int]Claim
}

func ownerOf(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}
