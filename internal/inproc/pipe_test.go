package inproc

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPipeKeepsOrderAcrossWrites(t *testing.T) {
	p := newPipe()
	var want bytes.Buffer
	go func() {
		for i := range 2000 {
			chunk := bytes.Repeat([]byte{byte(i)}, 1+i%700)
			want.Write(chunk)
			if _, err := p.Write(chunk); err != nil {
				t.Error(err)
				return
			}
		}
		p.CloseWriter(nil)
	}()
	got, err := io.ReadAll(io.LimitReader(p, 1<<30))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want.Bytes(), got), "bytes arrive in order, none lost")
}

func TestPipeWriterWaitsForASlowReader(t *testing.T) {
	p := newPipe()
	big := make([]byte, pipeLimit+1)
	_, err := p.Write(big) // the first write always fits: the buffer was empty
	require.NoError(t, err)
	wrote := make(chan error, 1)
	go func() { _, err := p.Write([]byte("x")); wrote <- err }()
	select {
	case err := <-wrote:
		t.Fatalf("write returned (%v) while the reader was more than the limit behind", err)
	case <-time.After(50 * time.Millisecond):
	}
	_, err = io.ReadFull(p, big)
	require.NoError(t, err)
	select {
	case err := <-wrote:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("writer still blocked after the reader caught up")
	}
}

func TestPipeClose(t *testing.T) {
	t.Run("writer error after the buffered bytes", func(t *testing.T) {
		p := newPipe()
		_, _ = p.Write([]byte("ab"))
		boom := errors.New("boom")
		p.CloseWriter(boom)
		b := make([]byte, 8)
		n, err := p.Read(b)
		require.NoError(t, err)
		assert.Equal(t, "ab", string(b[:n]))
		_, err = p.Read(b)
		assert.ErrorIs(t, err, boom)
		_, err = p.Write([]byte("c"))
		assert.ErrorIs(t, err, io.ErrClosedPipe)
	})
	t.Run("reader close fails a blocked writer", func(t *testing.T) {
		p := newPipe()
		_, _ = p.Write(make([]byte, pipeLimit+1))
		wrote := make(chan error, 1)
		go func() { _, err := p.Write([]byte("x")); wrote <- err }()
		require.NoError(t, p.CloseReader())
		select {
		case err := <-wrote:
			assert.ErrorIs(t, err, io.ErrClosedPipe)
		case <-time.After(30 * time.Second):
			t.Fatal("writer still blocked after the reader closed")
		}
		_, err := p.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.ErrClosedPipe)
	})
}
