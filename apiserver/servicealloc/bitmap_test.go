package servicealloc

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBitmapSetClear(t *testing.T) {
	b := newBitmap(130, 0)
	for _, i := range []int{0, 63, 64, 129} {
		assert.True(t, b.set(i), "set %d", i)
		assert.False(t, b.set(i), "set %d twice", i)
		assert.True(t, b.has(i))
	}
	assert.Equal(t, 4, b.used)
	var seen []int
	b.forEach(func(i int) { seen = append(seen, i) })
	assert.Equal(t, []int{0, 63, 64, 129}, seen)
	assert.True(t, b.clear(64))
	assert.False(t, b.clear(64))
	assert.False(t, b.has(64))
	assert.Equal(t, 3, b.used)
	b.reset()
	assert.Equal(t, 0, b.used)
	assert.False(t, b.has(0))
}

func TestBitmapFirstFree(t *testing.T) {
	b := newBitmap(200, 0)
	for i := 0; i < 150; i++ {
		b.set(i)
	}
	for _, tc := range []struct {
		name   string
		lo, hi int
		skip   func(int) bool
		want   int
		ok     bool
	}{
		{"across words", 0, 200, nil, 150, true},
		{"none below", 0, 150, nil, 0, false},
		{"inside window", 160, 170, nil, 160, true},
		{"skip", 150, 200, func(i int) bool { return i < 155 }, 155, true},
		{"skip all", 150, 152, func(int) bool { return true }, 0, false},
		{"last slot", 199, 200, nil, 199, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := b.firstFree(tc.lo, tc.hi, tc.skip)
			require.Equal(t, tc.ok, ok)
			if ok {
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

// TestBitmapPickBands: dynamic picks fill the upper band before touching the
// static one, then exhaust the range.
func TestBitmapPickBands(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	b := newBitmap(100, 20)
	for n := 0; n < 80; n++ {
		i, ok := b.pick(r, nil)
		require.True(t, ok)
		require.GreaterOrEqual(t, i, 20, "pick %d came from the static band while the dynamic one had room", n)
		require.True(t, b.set(i))
	}
	for n := 0; n < 20; n++ {
		i, ok := b.pick(r, nil)
		require.True(t, ok)
		require.Less(t, i, 20)
		require.True(t, b.set(i))
	}
	_, ok := b.pick(r, nil)
	assert.False(t, ok, "a full bitmap has nothing to pick")
}

func TestBitmapPickIsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	b := newBitmap(1<<16, 256)
	seen := map[int]bool{}
	for n := 0; n < 20; n++ {
		i, ok := b.pick(r, nil)
		require.True(t, ok)
		seen[i] = true
	}
	assert.Greater(t, len(seen), 15, "picks without set should scatter over the range")
}
