package servicealloc

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	mrand "math/rand/v2"
)

// Option configures a range or an Allocator.
type Option func(*options) error

type options struct {
	source mrand.Source
}

// WithRandSource sets the source of the random starting points of dynamic
// allocation (tests pass a seeded one for reproducible picks). The default
// is a ChaCha8 source seeded from crypto/rand.
func WithRandSource(src mrand.Source) Option {
	return func(o *options) error {
		if src == nil {
			return errors.New("servicealloc: nil rand source")
		}
		o.source = src
		return nil
	}
}

func buildOptions(opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	if o.source == nil {
		var seed [32]byte
		_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails on Linux
		o.source = mrand.NewChaCha8(seed)
	}
	return o, nil
}

// seedFrom derives an independent generator for one range, so that ranges
// built from one Source (at construction, on one goroutine) never share it.
func seedFrom(src mrand.Source) *mrand.Rand {
	var seed [32]byte
	for i := 0; i < 4; i++ {
		binary.LittleEndian.PutUint64(seed[i*8:], src.Uint64())
	}
	return mrand.New(mrand.NewChaCha8(seed))
}
