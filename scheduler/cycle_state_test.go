package scheduler

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCycleStateReadWriteDelete(t *testing.T) {
	s := NewCycleState(nil)
	_, err := s.Read("a")
	require.ErrorIs(t, err, ErrStateNotFound)

	s.Write("a", 1)
	s.Write("PreFilterLonger", "x")
	s.Write("a", 2) // overwrite keeps one entry
	v, err := s.Read("a")
	require.NoError(t, err)
	assert.Equal(t, 2, v)
	got, err := ReadAs[string](s, "PreFilterLonger")
	require.NoError(t, err)
	assert.Equal(t, "x", got)
	assert.Len(t, *s.values.Load(), 2)

	_, err = ReadAs[int](s, "PreFilterLonger")
	assert.ErrorContains(t, err, "holds string")

	s.Delete("a")
	_, err = s.Read("a")
	require.ErrorIs(t, err, ErrStateNotFound)
	s.Delete("never written")
	_, err = s.Read("PreFilterLonger")
	assert.NoError(t, err)
}

// TestCycleStateReadsDuringWrites: readers (Filter, Score) never see a
// torn list while a writer adds keys (run with -race).
func TestCycleStateReadsDuringWrites(t *testing.T) {
	s := NewCycleState(nil)
	s.Write("fixed", 7)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				v, err := s.Read("fixed")
				if err != nil || v != 7 {
					t.Errorf("read %v, %v", v, err)
					return
				}
			}
		}()
	}
	for i := range 100 {
		s.Write(fmt.Sprintf("k%d", i), i)
	}
	wg.Wait()
	v, err := s.Read("k99")
	require.NoError(t, err)
	assert.Equal(t, 99, v)
}
