package storewatch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSynced(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		done    bool
		ctx     context.Context
		timeout time.Duration
		wantErr error
	}{
		{name: "done", done: true, ctx: context.Background(), timeout: time.Nanosecond},
		{name: "done, context canceled", done: true, ctx: canceled, timeout: time.Minute},
		{name: "not done: timeout", ctx: context.Background(), timeout: time.Millisecond, wantErr: context.DeadlineExceeded},
		{name: "not done: canceled", ctx: canceled, timeout: time.Minute, wantErr: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSynced()
			if tc.done {
				s.Done()
				s.Done() // idempotent
			}
			err := s.WaitTimeout(tc.ctx, tc.timeout)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

func TestSyncedWaitReleasedByDone(t *testing.T) {
	s := NewSynced()
	errc := make(chan error, 1)
	go func() { errc <- s.Wait(context.Background()) }()
	s.Done()
	select {
	case err := <-errc:
		assert.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("Wait did not return after Done")
	}
}
