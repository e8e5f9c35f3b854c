package storewatch

import (
	"context"
	"sync"
	"time"
)

// Synced records that a view has been filled by its first list: the
// decisions made on it wait for it (bounded, so a store that never
// answers fails requests instead of hanging them), and WaitForSync
// methods expose it to the API server's start-up.
type Synced struct {
	once sync.Once
	ch   chan struct{}
}

// NewSynced returns a Synced not yet done.
func NewSynced() *Synced { return &Synced{ch: make(chan struct{})} }

// Done marks the view synced; calls after the first do nothing. It fits
// Run's synced callback.
func (s *Synced) Done() { s.once.Do(func() { close(s.ch) }) }

// Wait waits until Done or until ctx is done (returning its error).
func (s *Synced) Wait(ctx context.Context) error {
	select {
	case <-s.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WaitTimeout is Wait bounded by timeout as well: once synced it returns
// at once, without starting a timer.
func (s *Synced) WaitTimeout(ctx context.Context, timeout time.Duration) error {
	select {
	case <-s.ch:
		return nil
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.Wait(ctx)
}
