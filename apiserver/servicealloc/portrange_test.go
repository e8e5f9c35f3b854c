package servicealloc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

func TestNewPortRange(t *testing.T) {
	for _, tc := range []struct {
		pr      utilnet.PortRange
		static  int
		wantErr bool
	}{
		{pr: utilnet.PortRange{Base: 30000, Size: 2768}, static: 86},
		{pr: utilnet.PortRange{Base: 20000, Size: 10000}, static: 128},
		{pr: utilnet.PortRange{Base: 30000, Size: 100}, static: 16},
		{pr: utilnet.PortRange{Base: 30000, Size: 16}, static: 0},
		{pr: utilnet.PortRange{Base: 30000, Size: 0}, wantErr: true},
		{pr: utilnet.PortRange{Base: 0, Size: 10}, wantErr: true},
		{pr: utilnet.PortRange{Base: 65000, Size: 1000}, wantErr: true},
	} {
		t.Run(tc.pr.String(), func(t *testing.T) {
			r, err := NewPortRange(tc.pr, seeded())
			if tc.wantErr {
				require.ErrorIs(t, err, ErrInvalidRange)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.static, r.StaticSize())
			assert.Equal(t, tc.pr, r.Range())
		})
	}
}

func TestPortRangeAllocate(t *testing.T) {
	r, err := NewPortRange(DefaultNodePortRange, seeded())
	require.NoError(t, err)
	require.NoError(t, r.Allocate(30000))
	require.NoError(t, r.Allocate(32767))
	assert.EqualError(t, r.Allocate(30000), "provided port is already allocated")
	assert.ErrorIs(t, r.Check(30000), ErrPortAllocated)
	for _, p := range []int{29999, 32768, 80} {
		err := r.Allocate(p)
		assert.EqualError(t, err, "provided port is not in the valid range. The range of valid ports is 30000-32767")
		assert.ErrorIs(t, err, ErrNotInRange)
	}
	assert.True(t, r.Release(30000))
	assert.False(t, r.Release(30000))
	assert.False(t, r.Has(30000))
	assert.Equal(t, []int{32767}, r.Allocated())
}

func TestPortRangeExhaustion(t *testing.T) {
	r, err := NewPortRange(utilnet.PortRange{Base: 31000, Size: 64}, seeded())
	require.NoError(t, err)
	seen := map[int]bool{}
	for n := 0; n < r.Size(); n++ {
		p, err := r.AllocateNext()
		require.NoError(t, err)
		require.False(t, seen[p])
		seen[p] = true
		require.Equal(t, n >= r.Size()-r.StaticSize(), p < 31000+r.StaticSize(), "allocation %d got %d", n, p)
	}
	_, err = r.AllocateNext()
	assert.ErrorIs(t, err, ErrFull)
	_, err = r.peek(nil)
	assert.ErrorIs(t, err, ErrFull)
}
