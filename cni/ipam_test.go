package cni

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestIPAM(t *testing.T, cidr string, opts ...IPAMOption) (*IPAM, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "net")
	p, err := NewIPAM(dir, netip.MustParsePrefix(cidr), opts...)
	require.NoError(t, err)
	return p, dir
}

func TestIPAMAllocatesInOrderSkippingGateway(t *testing.T) {
	p, _ := newTestIPAM(t, "10.251.7.0/24")
	assert.Equal(t, netip.MustParseAddr("10.251.7.1"), p.Gateway())
	for i, want := range []string{"10.251.7.2", "10.251.7.3", "10.251.7.4"} {
		ip, err := p.Allocate(context.Background(), fmt.Sprintf("c%d", i), "eth0")
		require.NoError(t, err)
		assert.Equal(t, want, ip.String())
	}
}

func TestIPAMSameOwnerGetsSameAddress(t *testing.T) {
	p, _ := newTestIPAM(t, "10.251.7.0/24")
	a, err := p.Allocate(context.Background(), "c1", "eth0")
	require.NoError(t, err)
	b, err := p.Allocate(context.Background(), "c1", "eth0")
	require.NoError(t, err)
	assert.Equal(t, a, b)
	c, err := p.Allocate(context.Background(), "c1", "net1")
	require.NoError(t, err)
	assert.NotEqual(t, a, c, "another interface of the same container is another owner")
	got, ok, err := p.Lookup(context.Background(), "c1", "net1")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, c, got)
}

func TestIPAMOnDiskFormatMatchesHostLocal(t *testing.T) {
	p, dir := newTestIPAM(t, "10.251.7.0/24")
	ip, err := p.Allocate(context.Background(), "abc", "eth0")
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, ip.String()))
	require.NoError(t, err)
	assert.Equal(t, "abc\r\neth0", string(data))
	last, err := os.ReadFile(filepath.Join(dir, "last_reserved_ip.0"))
	require.NoError(t, err)
	assert.Equal(t, ip.String(), string(last))
	// A legacy file holding only the container ID belongs to any ifname.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "10.251.7.9"), []byte("legacy"), 0o600))
	fresh, err := NewIPAM(dir, p.Subnet()) // files written behind IPAM's back show on a fresh read
	require.NoError(t, err)
	got, ok, err := fresh.Lookup(context.Background(), "legacy", "eth0")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "10.251.7.9", got.String())
}

func TestIPAMReleaseIsIdempotentAndAddressIsReusedAfterWrap(t *testing.T) {
	// /29: gateway .1, allocatable .2-.6.
	p, dir := newTestIPAM(t, "10.251.8.0/29")
	ctx := context.Background()
	var got []netip.Addr
	for i := range 5 {
		ip, err := p.Allocate(ctx, fmt.Sprintf("c%d", i), "eth0")
		require.NoError(t, err)
		got = append(got, ip)
	}
	require.NoError(t, p.Release(ctx, "c2", "eth0"))
	require.NoError(t, p.Release(ctx, "c2", "eth0"), "second release")
	require.NoError(t, p.Release(ctx, "never", "eth0"), "release of nothing")
	_, err := os.Stat(filepath.Join(dir, got[2].String()))
	assert.ErrorIs(t, err, os.ErrNotExist)
	ip, err := p.Allocate(ctx, "new", "eth0")
	require.NoError(t, err)
	assert.Equal(t, got[2], ip, "the only free address is the released one")
}

func TestIPAMExhaustionNamesTheRange(t *testing.T) {
	p, _ := newTestIPAM(t, "10.251.9.0/30") // gateway .1, only .2 allocatable
	ctx := context.Background()
	_, err := p.Allocate(ctx, "a", "eth0")
	require.NoError(t, err)
	_, err = p.Allocate(ctx, "b", "eth0")
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrRangeExhausted)
	assert.Contains(t, err.Error(), "10.251.9.1-10.251.9.2 of 10.251.9.0/30")
}

func TestIPAMSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	cidr := netip.MustParsePrefix("10.251.10.0/24")
	ctx := context.Background()
	first, err := NewIPAM(dir, cidr)
	require.NoError(t, err)
	held := map[netip.Addr]bool{}
	for i := range 10 {
		ip, err := first.Allocate(ctx, fmt.Sprintf("c%d", i), "eth0")
		require.NoError(t, err)
		held[ip] = true
	}
	second, err := NewIPAM(dir, cidr) // a restarted process
	require.NoError(t, err)
	for i := range 10 {
		ip, err := second.Allocate(ctx, fmt.Sprintf("c%d", i), "eth0")
		require.NoError(t, err)
		assert.True(t, held[ip], "c%d keeps its address across the restart", i)
	}
	for i := range 10 {
		ip, err := second.Allocate(ctx, fmt.Sprintf("new%d", i), "eth0")
		require.NoError(t, err)
		assert.False(t, held[ip], "new owner must not get a held address")
		held[ip] = true
	}
	allocs, err := second.Allocations(ctx)
	require.NoError(t, err)
	assert.Len(t, allocs, 20)
}

func TestIPAMConcurrentAllocatorsSharingADirectory(t *testing.T) {
	// Two allocators on one directory stand in for two processes: only the
	// flock keeps them apart.
	dir := filepath.Join(t.TempDir(), "net")
	cidr := netip.MustParsePrefix("10.251.11.0/24")
	a, err := NewIPAM(dir, cidr)
	require.NoError(t, err)
	b, err := NewIPAM(dir, cidr)
	require.NoError(t, err)
	const n = 100
	ips := make([]netip.Addr, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		p := a
		if i%2 == 1 {
			p = b
		}
		wg.Go(func() { ips[i], errs[i] = p.Allocate(context.Background(), fmt.Sprintf("c%d", i), "eth0") })
	}
	wg.Wait()
	seen := map[netip.Addr]bool{}
	for i := range n {
		require.NoError(t, errs[i])
		require.False(t, seen[ips[i]], "duplicate %s", ips[i])
		seen[ips[i]] = true
	}
}

func TestIPAMOptions(t *testing.T) {
	ctx := context.Background()
	p, _ := newTestIPAM(t, "10.251.12.0/24",
		WithGateway(netip.MustParseAddr("10.251.12.254")),
		WithRange(netip.MustParseAddr("10.251.12.250"), netip.MustParseAddr("10.251.12.255")))
	var got []string
	for i := range 5 {
		ip, err := p.Allocate(ctx, fmt.Sprintf("c%d", i), "eth0")
		require.NoError(t, err)
		got = append(got, ip.String())
	}
	assert.Equal(t, []string{"10.251.12.250", "10.251.12.251", "10.251.12.252", "10.251.12.253", "10.251.12.255"}, got)
	_, err := p.Allocate(ctx, "full", "eth0")
	assert.ErrorIs(t, err, ErrRangeExhausted)
}

func TestNewIPAMRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		cidr string
		opts []IPAMOption
	}{
		{"too small v4", "10.0.0.0/31", nil},
		{"too small v6", "fd00::/127", nil},
		{"gateway outside", "10.0.0.0/24", []IPAMOption{WithGateway(netip.MustParseAddr("10.0.1.1"))}},
		{"range reversed", "10.0.0.0/24", []IPAMOption{WithRange(netip.MustParseAddr("10.0.0.9"), netip.MustParseAddr("10.0.0.3"))}},
		{"range outside", "10.0.0.0/24", []IPAMOption{WithRange(netip.MustParseAddr("10.0.0.9"), netip.MustParseAddr("10.0.1.3"))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewIPAM(dir, netip.MustParsePrefix(tc.cidr), tc.opts...)
			assert.Error(t, err)
		})
	}
}

func TestIPAMIPv6(t *testing.T) {
	p, _ := newTestIPAM(t, "fd00:251::/120")
	ip, err := p.Allocate(context.Background(), "c", "eth0")
	require.NoError(t, err)
	assert.Equal(t, "fd00:251::2", ip.String())
	_, end := p.Range()
	assert.Equal(t, "fd00:251::ff", end.String(), "IPv6 has no broadcast address to skip")
}

func TestLastAddr(t *testing.T) {
	tests := map[string]string{
		"10.0.0.0/24":     "10.0.0.255",
		"10.0.0.0/8":      "10.255.255.255",
		"10.1.2.3/32":     "10.1.2.3",
		"10.0.0.0/30":     "10.0.0.3",
		"192.168.4.0/22":  "192.168.7.255",
		"fd00::/64":       "fd00::ffff:ffff:ffff:ffff",
		"fd00:1:2::/120":  "fd00:1:2::ff",
		"0.0.0.0/0":       "255.255.255.255",
		"172.16.128.0/17": "172.16.255.255",
	}
	for in, want := range tests {
		assert.Equal(t, want, lastAddr(netip.MustParsePrefix(in)).String(), in)
	}
}

func TestIPAMHonoursCancelledContext(t *testing.T) {
	p, _ := newTestIPAM(t, "10.251.13.0/24")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Allocate(ctx, "c", "eth0")
	assert.ErrorIs(t, err, context.Canceled)
}

func TestIPAMSeesChangesMadeByAnotherInstance(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	cidr := netip.MustParsePrefix("10.251.14.0/24")
	ctx := context.Background()
	a, err := NewIPAM(dir, cidr)
	require.NoError(t, err)
	b, err := NewIPAM(dir, cidr)
	require.NoError(t, err)
	ip, err := a.Allocate(ctx, "c1", "eth0")
	require.NoError(t, err)
	got, ok, err := b.Lookup(ctx, "c1", "eth0")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, ip, got)
	require.NoError(t, b.Release(ctx, "c1", "eth0"))
	_, ok, err = a.Lookup(ctx, "c1", "eth0")
	require.NoError(t, err)
	assert.False(t, ok, "a re-reads the directory after b's change")
	allocs, err := a.Allocations(ctx)
	require.NoError(t, err)
	assert.Empty(t, allocs)
}

func TestIPAMStaleCacheNeverDoubleAllocates(t *testing.T) {
	p, dir := newTestIPAM(t, "10.251.15.0/29")
	ctx := context.Background()
	_, err := p.Allocate(ctx, "c0", "eth0") // .2, cache now valid
	require.NoError(t, err)
	// Another tool takes .3 without bumping the generation.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "10.251.15.3"), []byte("other\r\neth0"), 0o600))
	ip, err := p.Allocate(ctx, "c1", "eth0")
	require.NoError(t, err)
	assert.Equal(t, "10.251.15.4", ip.String(), "the exclusive create catches what the cache missed")
	allocs, err := p.Allocations(ctx)
	require.NoError(t, err)
	assert.Len(t, allocs, 3)
}
