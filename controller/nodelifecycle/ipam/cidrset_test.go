package ipam_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/controller/nodelifecycle/ipam"
)

func mustSet(t *testing.T, cidr string, mask int) *ipam.CIDRSet {
	t.Helper()
	s, err := ipam.NewCIDRSet(netip.MustParsePrefix(cidr), mask)
	require.NoError(t, err)
	return s
}

func allocate(t *testing.T, s *ipam.CIDRSet, n int) []string {
	t.Helper()
	var out []string
	for range n {
		p, err := s.AllocateNext()
		require.NoError(t, err)
		out = append(out, p.String())
	}
	return out
}

func TestCIDRSetAllocates(t *testing.T) {
	for _, tc := range []struct {
		cluster string
		mask    int
		want    []string
	}{
		{"10.244.0.0/16", 24, []string{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"}},
		{"10.0.0.0/8", 24, []string{"10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24"}},
		{"192.168.0.0/24", 26, []string{"192.168.0.0/26", "192.168.0.64/26", "192.168.0.128/26"}},
		{"fd00:10::/56", 64, []string{"fd00:10::/64", "fd00:10:0:1::/64", "fd00:10:0:2::/64"}},
		{"10.1.2.3/16", 24, []string{"10.1.0.0/24", "10.1.1.0/24", "10.1.2.0/24"}}, // unmasked input
	} {
		t.Run(tc.cluster, func(t *testing.T) {
			assert.Equal(t, tc.want, allocate(t, mustSet(t, tc.cluster, tc.mask), len(tc.want)))
		})
	}
}

func TestCIDRSetExhaustionAndNextFit(t *testing.T) {
	s := mustSet(t, "10.0.0.0/22", 24)
	assert.Equal(t, 4, s.Size())
	got := allocate(t, s, 4)
	assert.Equal(t, []string{"10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24", "10.0.3.0/24"}, got)
	_, err := s.AllocateNext()
	assert.ErrorIs(t, err, ipam.ErrExhausted)

	require.NoError(t, s.Release(netip.MustParsePrefix("10.0.1.0/24")))
	require.NoError(t, s.Release(netip.MustParsePrefix("10.0.3.0/24")))
	assert.Equal(t, 2, s.Used())
	// Next-fit: continues after the last allocation (index 3), wrapping.
	assert.Equal(t, []string{"10.0.1.0/24", "10.0.3.0/24"}, allocate(t, s, 2))
}

func TestCIDRSetOccupy(t *testing.T) {
	s := mustSet(t, "10.244.0.0/16", 24)
	free, err := s.Occupy(netip.MustParsePrefix("10.244.0.0/24"))
	require.NoError(t, err)
	assert.True(t, free)
	free, err = s.Occupy(netip.MustParsePrefix("10.244.0.0/24"))
	require.NoError(t, err)
	assert.False(t, free, "occupying twice is idempotent and reports the overlap")
	// A larger prefix occupies every node subnet it covers.
	_, err = s.Occupy(netip.MustParsePrefix("10.244.2.0/23"))
	require.NoError(t, err)
	assert.Equal(t, 3, s.Used())
	assert.Equal(t, []string{"10.244.1.0/24", "10.244.4.0/24"}, allocate(t, s, 2))
	// A smaller one occupies its containing subnet.
	_, err = s.Occupy(netip.MustParsePrefix("10.244.5.128/25"))
	require.NoError(t, err)
	assert.Equal(t, []string{"10.244.6.0/24"}, allocate(t, s, 1))

	_, err = s.Occupy(netip.MustParsePrefix("10.245.0.0/24"))
	assert.ErrorIs(t, err, ipam.ErrOutOfRange)
	_, err = s.Occupy(netip.MustParsePrefix("fd00::/64"))
	assert.ErrorIs(t, err, ipam.ErrOutOfRange)
	assert.ErrorIs(t, s.Release(netip.MustParsePrefix("10.0.0.0/8")), ipam.ErrOutOfRange)
}

func TestNewCIDRSetRejects(t *testing.T) {
	for _, tc := range []struct {
		cluster string
		mask    int
	}{
		{"10.244.0.0/16", 15}, // mask shorter than the cluster
		{"10.244.0.0/16", 33}, // longer than the family
		{"10.0.0.0/8", 25},    // 2^17 subnets
		{"fd00::/48", 128},    // 2^80 subnets
	} {
		_, err := ipam.NewCIDRSet(netip.MustParsePrefix(tc.cluster), tc.mask)
		assert.Error(t, err, "%s /%d", tc.cluster, tc.mask)
	}
	_, err := ipam.NewCIDRSet(netip.Prefix{}, 24)
	assert.Error(t, err)
}
