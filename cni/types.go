package cni

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultIfName is the interface name a pod sees when Attachment.IfName is
// empty, as with Kubernetes.
const DefaultIfName = "eth0"

var (
	// ErrInvalidAttachment reports an Attachment missing a required field or
	// holding an unusable value.
	ErrInvalidAttachment = errors.New("invalid attachment")
	// ErrRangeExhausted reports that IPAM has no free address left.
	ErrRangeExhausted = errors.New("no free IP address")
	// ErrNotAttached reports, from Check, that the attachment is missing or
	// differs from what Setup configured.
	ErrNotAttached = errors.New("attachment not set up")
	// ErrExists reports an interface name already taken in the namespace by
	// something Setup did not create.
	ErrExists = errors.New("already exists")
)

// Attachment names one network attachment of a pod sandbox: like CNI's
// RuntimeConf, without depending on libcni.
type Attachment struct {
	// ContainerID identifies the sandbox (required, unique per node).
	ContainerID string
	// NetNS is the path of the sandbox's network namespace. Setup and Check
	// need it; Teardown works without it (and when it no longer exists).
	NetNS string
	// IfName is the interface name inside the namespace; DefaultIfName when
	// empty.
	IfName string
	// Pod names the pod, for plugins that want K8S_POD_* arguments and for
	// logs.
	Pod types.NamespacedName
}

// Normalize returns a copy with defaults filled in after validating it.
// needNetNS is false for Teardown.
func (a *Attachment) Normalize(needNetNS bool) (Attachment, error) {
	if a == nil {
		return Attachment{}, fmt.Errorf("nil attachment: %w", ErrInvalidAttachment)
	}
	out := *a
	if out.IfName == "" {
		out.IfName = DefaultIfName
	}
	switch {
	case out.ContainerID == "":
		return out, fmt.Errorf("container ID is required: %w", ErrInvalidAttachment)
	case strings.ContainsAny(out.ContainerID, "/\r\n\x00"):
		return out, fmt.Errorf("container ID %q has a forbidden character: %w", out.ContainerID, ErrInvalidAttachment)
	case needNetNS && out.NetNS == "":
		return out, fmt.Errorf("network namespace path is required: %w", ErrInvalidAttachment)
	case len(out.IfName) > 15 || strings.ContainsAny(out.IfName, "/: \t\r\n\x00") || out.IfName == "." || out.IfName == "..":
		return out, fmt.Errorf("interface name %q is not a valid Linux interface name: %w", out.IfName, ErrInvalidAttachment)
	}
	return out, nil
}

// Result is what Setup configured, mirroring the CNI result format.
type Result struct {
	Interfaces []Interface
	IPs        []IPConfig
	Routes     []Route
	DNS        DNS
}

// Interface is one link Setup created or configured.
type Interface struct {
	Name string
	MAC  net.HardwareAddr
	// Sandbox is the namespace path for links inside the pod; empty for
	// links on the host.
	Sandbox string
}

// IPConfig is one address given to an interface.
type IPConfig struct {
	// Address holds the IP and its subnet's prefix length.
	Address netip.Prefix
	Gateway netip.Addr
	// Interface indexes Result.Interfaces; -1 when unknown.
	Interface int
}

// Route is one route Setup installed in the pod's namespace.
type Route struct {
	Dst netip.Prefix
	GW  netip.Addr
}

// DNS is the DNS configuration a plugin returned (CNI result "dns"); the
// kubelet's own DNS files come from ResolvConf instead.
type DNS struct {
	Nameservers []string
	Domain      string
	Search      []string
	Options     []string
}

// PodIPs returns the addresses given to interfaces inside the sandbox (all
// addresses when no interface is known), in result order.
func (r *Result) PodIPs() []netip.Addr {
	var out []netip.Addr
	for _, ip := range r.IPs {
		if ip.Interface >= 0 && ip.Interface < len(r.Interfaces) && r.Interfaces[ip.Interface].Sandbox == "" {
			continue
		}
		out = append(out, ip.Address.Addr())
	}
	return out
}

// Networker attaches sandboxes to the node's network.
type Networker interface {
	// Setup creates the attachment and returns what it configured. A retry
	// after a failure (or after success) converges to one attachment with
	// the same address.
	Setup(ctx context.Context, a *Attachment) (*Result, error)
	// Teardown removes the attachment and releases its addresses. It is
	// idempotent: nothing set up, a half set up attachment and a namespace
	// that no longer exists are all successes.
	Teardown(ctx context.Context, a *Attachment) error
}

// Checker is implemented by Networkers that can verify an attachment is
// still as Setup left it (CNI CHECK). Errors wrap ErrNotAttached when it is
// not.
type Checker interface {
	Check(ctx context.Context, a *Attachment) error
}

// Cleaner is implemented by Networkers that hold node-level state (a
// bridge, firewall tables) which should be removed when the node leaves.
type Cleaner interface {
	Cleanup(ctx context.Context) error
}

// GarbageCollector is implemented by Networkers that can release what
// attachments no longer in use still hold (CNI GC), for example after the
// node restarted while pods were deleted: everything but keep goes.
type GarbageCollector interface {
	GC(ctx context.Context, keep []*Attachment) error
}
