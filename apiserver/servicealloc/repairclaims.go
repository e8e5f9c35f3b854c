package servicealloc

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// claimLeak counts the repairs in a row that found one record (by ID)
// without a Service holding its value.
type claimLeak struct {
	id string
	n  int
}

// repairClaims reconciles the records with the stored Services, as
// Kubernetes' IPAddress repair loop does for both directions of the
// Service ↔ IPAddress relation:
//   - a value a stored Service holds with no record gets one, owned by the
//     Service (stores written before records existed, a record deleted by
//     hand); AddedIPs / AddedPorts;
//   - a record whose owner does not hold its value (a crash between the
//     claim and the Service write, a release that failed) is deleted once
//     LeakThreshold repairs in a row found the same record so — a create's
//     record has no stored Service until its write lands; ReleasedIPs /
//     ReleasedPorts. Records other writers created are left alone.
//
// The records are listed before the Services, so a Service stored in
// between is seen with its record. The hints are rebuilt from the result.
// a.repairMu is held.
func (a *Allocator) repairClaims(ctx context.Context) (*Report, error) {
	set, err := a.claims.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("servicealloc: repair: %w", err)
	}
	var svcs []*corev1.Service
	if a.list != nil {
		if svcs, err = a.list(ctx); err != nil {
			return nil, fmt.Errorf("servicealloc: repair: listing services: %w", err)
		}
	}
	h := collect(a, svcs)
	r := &h.Report
	for ip, owners := range h.ips {
		if _, ok := set.IPs[ip]; ok {
			continue
		}
		switch err := a.claims.ClaimIP(ctx, ip, owners[0]); {
		case err == nil:
			r.AddedIPs = append(r.AddedIPs, ip)
			set.IPs[ip] = Claim{Owner: owners[0]}
		case errors.Is(err, ErrIPAllocated): // claimed since the list
			set.IPs[ip] = Claim{}
		default:
			return nil, fmt.Errorf("servicealloc: repair: %w", err)
		}
	}
	for p, owners := range h.ports {
		if _, ok := set.Ports[p]; ok {
			continue
		}
		switch err := a.claims.ClaimPort(ctx, p, owners[0]); {
		case err == nil:
			r.AddedPorts = append(r.AddedPorts, p)
			set.Ports[p] = Claim{Owner: owners[0]}
		case errors.Is(err, ErrPortAllocated):
			set.Ports[p] = Claim{}
		default:
			return nil, fmt.Errorf("servicealloc: repair: %w", err)
		}
	}
	if a.list != nil {
		leaks := map[string]claimLeak{}
		for ip, cl := range set.IPs {
			if a.orphan(leaks, "ip/"+ip.String(), cl, h.ips[ip]) {
				if err := a.claims.ReleaseIP(ctx, ip, cl); err != nil {
					return nil, fmt.Errorf("servicealloc: repair: %w", err)
				}
				delete(set.IPs, ip)
				r.ReleasedIPs = append(r.ReleasedIPs, ip)
			}
		}
		for p, cl := range set.Ports {
			if a.orphan(leaks, "port/"+strconv.Itoa(p), cl, h.ports[p]) {
				if err := a.claims.ReleasePort(ctx, p, cl); err != nil {
					return nil, fmt.Errorf("servicealloc: repair: %w", err)
				}
				delete(set.Ports, p)
				r.ReleasedPorts = append(r.ReleasedPorts, p)
			}
		}
		a.claimLeaks = leaks
	}
	slices.SortFunc(r.AddedIPs, netip.Addr.Compare)
	slices.SortFunc(r.ReleasedIPs, netip.Addr.Compare)
	slices.Sort(r.AddedPorts)
	slices.Sort(r.ReleasedPorts)
	a.setHints(set)
	return r, nil
}

// orphan counts a record whose owner does not hold its value and reports
// whether it has been so for LeakThreshold repairs; leaks collects the
// counts carried to the next repair.
func (a *Allocator) orphan(leaks map[string]claimLeak, k string, cl Claim, holders []types.NamespacedName) bool {
	if cl.Owner.Name == "" || slices.Contains(holders, cl.Owner) {
		return false
	}
	l := a.claimLeaks[k]
	if l.id != cl.ID {
		l = claimLeak{id: cl.ID}
	}
	l.n++
	if l.n >= LeakThreshold {
		return true
	}
	leaks[k] = l
	return false
}
