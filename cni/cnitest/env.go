// Package cnitest is the conformance suite for cni.Networker
// implementations, like containerd's SnapshotterSuite: Run exercises the
// contract (Setup, idempotent Teardown, Check, connectivity between pods
// and to the gateway, concurrency, repeated cycles) against real network
// namespaces, and every built-in Networker runs it. It needs root.
//
// Each test builds a throwaway node with NewEnv: a network namespace that
// stands in for the host (so nothing touches the machine's own network), a
// run directory for pinned pod namespaces, a unique private PodCIDR and
// unique names, all removed in t.Cleanup, followed by a leak check.
package cnitest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/netns"
	"github.com/podkit/podkit/internal/testutil"
)

// Env is one test's throwaway node.
type Env struct {
	// Suffix is random and unique to this Env; names below include it.
	Suffix string
	// NodeNS stands in for the host's network namespace: networkers under
	// test put their bridge and host veths there.
	NodeNS *netns.NS
	// RunDir holds pinned pod namespaces.
	RunDir string
	// StateDir is a fresh directory for IPAM and caches.
	StateDir string
	// PodCIDR is a private /24 (10.251.x.0/24) for this node.
	PodCIDR netip.Prefix
	// BridgeName and TableName are unique names for the node bridge and the
	// nftables table. Networkers under test must name their bridge
	// BridgeName: the suite checks the node routes pod traffic through it.
	BridgeName string
	TableName  string

	t testing.TB
}

// NewEnv builds an Env, skipping (or failing, see testutil) off-root.
// Everything it creates is removed in t.Cleanup, after which the run
// directory must be empty and hold no mounts.
func NewEnv(t testing.TB) *Env {
	t.Helper()
	testutil.RequireRoot(t)
	suffix := RandomHex(3)
	base := t.TempDir()
	e := &Env{
		Suffix:     suffix,
		RunDir:     filepath.Join(base, runDirName()),
		StateDir:   filepath.Join(base, "state"),
		PodCIDR:    netip.MustParsePrefix(fmt.Sprintf("10.251.%d.0/24", RandomByte())),
		BridgeName: "pkbr" + suffix,
		TableName:  "podkit_test_" + suffix,
		t:          t,
	}
	require.NoError(t, os.MkdirAll(e.StateDir, 0o755))
	t.Cleanup(func() { e.checkRunDirClean(t) })
	ns, err := netns.New(e.RunDir, "node-"+suffix)
	require.NoError(t, err)
	e.NodeNS = ns
	t.Cleanup(func() { assert.NoError(t, ns.Remove()) })
	// A node namespace starts with lo down; bring it up like a real host.
	h, err := ns.Handle()
	require.NoError(t, err)
	defer h.Close()
	lo, err := h.LinkByName("lo")
	require.NoError(t, err)
	require.NoError(t, h.LinkSetUp(lo))
	return e
}

// NewPodNS creates a pinned pod namespace removed at cleanup.
func (e *Env) NewPodNS(t testing.TB) *netns.NS {
	t.Helper()
	ns, err := netns.New(e.RunDir, "pod-"+RandomHex(6))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ns.Remove()) })
	return ns
}

// Attachment returns an attachment for ns with a random container ID.
func (e *Env) Attachment(ns *netns.NS) *cni.Attachment {
	id := RandomHex(16)
	a := &cni.Attachment{ContainerID: id, IfName: cni.DefaultIfName}
	a.Pod.Namespace, a.Pod.Name = "default", "pod-"+id[:8]
	if ns != nil {
		a.NetNS = ns.Path()
	}
	return a
}

// NodeLinks lists the names of the links in the node namespace.
func (e *Env) NodeLinks(t testing.TB) []string {
	t.Helper()
	return Links(t, e.NodeNS.Path())
}

// Links lists the names of the links in the namespace at path.
func Links(t testing.TB, nsPath string) []string {
	t.Helper()
	h, err := netns.HandleAt(nsPath)
	require.NoError(t, err)
	defer h.Close()
	var links []netlink.Link
	for range 5 {
		links, err = h.LinkList()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	require.NoError(t, err)
	names := make([]string, 0, len(links))
	for _, l := range links {
		names = append(names, l.Attrs().Name)
	}
	return names
}

// checkRunDirClean fails when pinned namespaces or files remain.
func (e *Env) checkRunDirClean(t testing.TB) {
	t.Helper()
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], e.RunDir) {
			t.Errorf("leak: mount %s remains under %s", f[4], e.RunDir)
		}
	}
	entries, err := os.ReadDir(e.RunDir)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	require.NoError(t, err)
	for _, en := range entries {
		t.Errorf("leak: %s remains in %s", en.Name(), e.RunDir)
	}
}

// RandomHex returns n random bytes in hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// RandomByte returns a random byte.
func RandomByte() byte {
	var b [1]byte
	_, _ = rand.Read(b[:])
	return b[0]
}

// runDirName names run directories after the test process, so a leak
// check tells this binary's namespaces from those of test binaries running
// next to it.
func runDirName() string { return fmt.Sprintf("run-%d", os.Getpid()) }

// CheckLeaks looks, after a test binary's tests, for what its Envs and the
// tests built on them left behind: namespaces pinned by this process, and
// links in the caller's namespace whose names start with one of
// linkPrefixes (the names this binary's tests give host links). Call it
// from TestMain after m.Run.
func CheckLeaks(linkPrefixes ...string) error {
	var leaks []string
	if len(linkPrefixes) > 0 {
		links, err := netlink.LinkList()
		if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
			return fmt.Errorf("list links: %w", err)
		}
		for _, l := range links {
			for _, prefix := range linkPrefixes {
				if n := l.Attrs().Name; strings.HasPrefix(n, prefix) {
					leaks = append(leaks, "link "+n)
				}
			}
		}
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	mine := "/" + runDirName() + "/"
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.Contains(line, " - nsfs ") && strings.Contains(f[4], mine) {
			leaks = append(leaks, "pinned namespace "+f[4])
		}
	}
	if len(leaks) > 0 {
		return fmt.Errorf("leaked: %s", strings.Join(leaks, ", "))
	}
	return nil
}
