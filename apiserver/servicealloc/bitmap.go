package servicealloc

import (
	"math/bits"
	"math/rand/v2"
)

// bitmap is the allocation state of one range: slot i is in use when its bit
// is set. Slots [0, static) form the static band, which dynamic allocation
// only uses once the upper, dynamic band [static, size) is full (KEP-3070
// for cluster IPs, KEP-3668 for node ports): users picking values by hand
// choose low ones and rarely collide with the allocator.
//
// A bitmap is not safe for concurrent use; its range's mutex guards it.
type bitmap struct {
	words  []uint64
	size   int
	static int
	used   int
}

func newBitmap(size, static int) *bitmap {
	return &bitmap{words: make([]uint64, (size+63)/64), size: size, static: static}
}

func (b *bitmap) has(i int) bool { return b.words[i/64]&(1<<(uint(i)%64)) != 0 }

// set marks slot i used; false when it already was.
func (b *bitmap) set(i int) bool {
	if b.has(i) {
		return false
	}
	b.words[i/64] |= 1 << (uint(i) % 64)
	b.used++
	return true
}

// clear frees slot i; false when it was free.
func (b *bitmap) clear(i int) bool {
	if !b.has(i) {
		return false
	}
	b.words[i/64] &^= 1 << (uint(i) % 64)
	b.used--
	return true
}

func (b *bitmap) reset() {
	clear(b.words)
	b.used = 0
}

// firstFree returns the lowest free slot in [lo, hi) for which skip (may be
// nil) is false.
func (b *bitmap) firstFree(lo, hi int, skip func(int) bool) (int, bool) {
	for i := lo; i < hi; {
		off := uint(i) % 64
		free := ^b.words[i/64] >> off
		if free == 0 {
			i += 64 - int(off)
			continue
		}
		j := i + bits.TrailingZeros64(free)
		if j >= hi {
			return 0, false
		}
		if skip == nil || !skip(j) {
			return j, true
		}
		i = j + 1
	}
	return 0, false
}

// pickIn scans [lo, hi) for a free slot from a random start, wrapping once.
func (b *bitmap) pickIn(r *rand.Rand, lo, hi int, skip func(int) bool) (int, bool) {
	if hi <= lo {
		return 0, false
	}
	start := lo + r.IntN(hi-lo)
	if j, ok := b.firstFree(start, hi, skip); ok {
		return j, true
	}
	return b.firstFree(lo, start, skip)
}

// pick chooses a free slot at random: in the dynamic band first, then in
// the static band. skip excludes slots without marking them (dry runs).
func (b *bitmap) pick(r *rand.Rand, skip func(int) bool) (int, bool) {
	if j, ok := b.pickIn(r, b.static, b.size, skip); ok {
		return j, true
	}
	return b.pickIn(r, 0, b.static, skip)
}

// forEach calls fn for every used slot in increasing order.
func (b *bitmap) forEach(fn func(int)) {
	for w, word := range b.words {
		for word != 0 {
			i := bits.TrailingZeros64(word)
			fn(w*64 + i)
			word &^= 1 << uint(i)
		}
	}
}
