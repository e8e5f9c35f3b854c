package servicealloc

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestNewIPRange(t *testing.T) {
	for _, tc := range []struct {
		cidr           string
		size, static   int
		first          string
		family         corev1.IPFamily
		wantErr        bool
		wantErrMessage string
	}{
		{cidr: "10.96.0.0/12", size: 1<<20 - 2, static: 256, first: "10.96.0.1", family: corev1.IPv4Protocol},
		{cidr: "10.96.5.7/12", size: 1<<20 - 2, static: 256, first: "10.96.0.1", family: corev1.IPv4Protocol}, // masked
		{cidr: "10.0.0.0/16", size: 65534, static: 256, first: "10.0.0.1", family: corev1.IPv4Protocol},
		{cidr: "10.0.0.0/24", size: 254, static: 16, first: "10.0.0.1", family: corev1.IPv4Protocol},
		{cidr: "10.0.0.0/27", size: 30, static: 16, first: "10.0.0.1", family: corev1.IPv4Protocol},
		{cidr: "10.0.0.0/28", size: 14, static: 0, first: "10.0.0.1", family: corev1.IPv4Protocol},
		{cidr: "10.0.0.0/30", size: 2, static: 0, first: "10.0.0.1", family: corev1.IPv4Protocol},
		{cidr: "fd00::/108", size: 1<<20 - 1, static: 256, first: "fd00::1", family: corev1.IPv6Protocol},
		{cidr: "fd00::/120", size: 255, static: 16, first: "fd00::1", family: corev1.IPv6Protocol},
		{cidr: "10.0.0.0/31", wantErr: true, wantErrMessage: "service IP range 10.0.0.0/31 has no usable address: invalid allocation range"},
		{cidr: "10.0.0.0/11", wantErr: true, wantErrMessage: "service IP range 10.0.0.0/11 is too large: at most 20 host bits (a /12 for IPv4, /108 for IPv6): invalid allocation range"},
		{cidr: "fd00::/64", wantErr: true},
	} {
		t.Run(tc.cidr, func(t *testing.T) {
			r, err := NewIPRange(mustPrefix(tc.cidr), seeded())
			if tc.wantErr {
				require.ErrorIs(t, err, ErrInvalidRange)
				if tc.wantErrMessage != "" {
					assert.EqualError(t, err, tc.wantErrMessage)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.size, r.Size())
			assert.Equal(t, tc.static, r.StaticSize())
			assert.Equal(t, tc.first, r.First().String())
			assert.Equal(t, tc.family, r.Family())
			assert.Equal(t, tc.size, r.Free())
		})
	}
	_, err := NewIPRange(netip.Prefix{})
	assert.ErrorIs(t, err, ErrInvalidRange)
}

func TestIPRangeAllocate(t *testing.T) {
	r, err := NewIPRange(mustPrefix("10.96.0.0/12"), seeded())
	require.NoError(t, err)
	for _, tc := range []struct {
		ip      string
		wantErr string
	}{
		{"10.96.0.1", ""},
		{"10.96.0.10", ""},
		{"10.111.255.254", ""},
		{"10.96.0.10", "provided IP is already allocated"},
		{"10.96.0.0", "the provided IP (10.96.0.0) is not in the valid range. The range of valid IPs is 10.96.0.0/12"},
		{"10.111.255.255", "the provided IP (10.111.255.255) is not in the valid range. The range of valid IPs is 10.96.0.0/12"},
		{"10.0.0.1", "the provided IP (10.0.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12"},
		{"fd00::1", "the provided IP (fd00::1) is not in the valid range. The range of valid IPs is 10.96.0.0/12"},
	} {
		t.Run(tc.ip, func(t *testing.T) {
			ip := mustAddr(tc.ip)
			checkErr := r.Check(ip)
			err := r.Allocate(ip)
			if tc.wantErr == "" {
				require.NoError(t, checkErr)
				require.NoError(t, err)
				assert.True(t, r.Has(ip))
				return
			}
			require.EqualError(t, err, tc.wantErr)
			assert.EqualError(t, checkErr, tc.wantErr, "Check reports what Allocate would")
		})
	}
	assert.Equal(t, 3, r.Used())
	var re *RangeError
	require.ErrorAs(t, r.Allocate(mustAddr("10.0.0.1")), &re)
	assert.ErrorIs(t, re, ErrNotInRange)
	assert.True(t, r.Release(mustAddr("10.96.0.10")))
	assert.False(t, r.Release(mustAddr("10.96.0.10")), "releasing twice")
	assert.False(t, r.Release(mustAddr("10.0.0.1")), "releasing outside the range")
	assert.NoError(t, r.Allocate(mustAddr("10.96.0.10")), "a released address is free again")
}

// TestIPRangeExhaustion allocates a whole range dynamically: every address
// once, upper band before static band, never network nor broadcast, then
// ErrFull; a release makes exactly that address available again.
func TestIPRangeExhaustion(t *testing.T) {
	for _, cidr := range []string{"192.168.7.0/24", "10.0.0.0/28", "fd00::/120"} {
		t.Run(cidr, func(t *testing.T) {
			r, err := NewIPRange(mustPrefix(cidr), seeded())
			require.NoError(t, err)
			staticEnd := r.First()
			for i := 0; i < r.StaticSize(); i++ {
				staticEnd = staticEnd.Next()
			}
			seen := map[netip.Addr]bool{}
			for n := 0; n < r.Size(); n++ {
				ip, err := r.AllocateNext()
				require.NoError(t, err)
				require.True(t, r.Contains(ip), "%s outside the range", ip)
				require.False(t, seen[ip], "%s handed out twice", ip)
				seen[ip] = true
				inStatic := ip.Less(staticEnd)
				require.Equal(t, n >= r.Size()-r.StaticSize(), inStatic, "allocation %d got %s", n, ip)
			}
			_, err = r.AllocateNext()
			require.ErrorIs(t, err, ErrFull)
			assert.Equal(t, 0, r.Free())
			assert.False(t, seen[r.Prefix().Addr()], "the network address is never handed out")

			freed := r.First().Next().Next()
			require.True(t, r.Release(freed))
			ip, err := r.AllocateNext()
			require.NoError(t, err)
			assert.Equal(t, freed, ip)
			assert.Len(t, r.Allocated(), r.Size())
		})
	}
}

func TestIPRangePeekReservesNothing(t *testing.T) {
	r, err := NewIPRange(mustPrefix("10.0.0.0/30"), seeded())
	require.NoError(t, err)
	a, err := r.peek(nil)
	require.NoError(t, err)
	b, err := r.peek(func(ip netip.Addr) bool { return ip == a })
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	assert.Equal(t, 0, r.Used())
	_, err = r.peek(func(netip.Addr) bool { return true })
	assert.True(t, errors.Is(err, ErrFull))
}
