package watchcache

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The queue keeps order, refuses pushes beyond its limit, tells a waiting
// writer when a pop made room, and lets a burst's memory go once drained.
func TestQueue(t *testing.T) {
	q := newQueue(3)
	for rev := uint64(1); rev <= 3; rev++ {
		assert.True(t, q.push(&entry{Event: Event{Revision: rev}}))
	}
	assert.False(t, q.push(&entry{Event: Event{Revision: 4}}), "full")
	assert.Equal(t, 3, q.len())
	select {
	case <-q.ready:
	default:
		t.Fatal("no ready token after a push")
	}
	assert.Equal(t, uint64(1), q.pop().Revision)
	select {
	case <-q.room:
	default:
		t.Fatal("no room token after a pop from a full queue")
	}
	assert.True(t, q.push(&entry{Event: Event{Revision: 4}}))
	for rev := uint64(2); rev <= 4; rev++ {
		assert.Equal(t, rev, q.pop().Revision)
	}
	assert.Nil(t, q.pop())
	assert.Zero(t, q.len())

	big := newQueue(10000)
	for range 5000 {
		big.push(&entry{})
	}
	for big.pop() != nil {
	}
	assert.Nil(t, big.items, "a drained burst's backing array is released")
}

// TestQueueLaggingReaderKeepsStorageBounded: a reader that stays behind
// never empties the queue; the storage it has read must still be reused.
func TestQueueLaggingReaderKeepsStorageBounded(t *testing.T) {
	q := newQueue(10000)
	for rev := uint64(1); rev <= 100; rev++ {
		assert.True(t, q.push(&entry{Event: Event{Revision: rev}}))
	}
	next := uint64(1)
	for rev := uint64(101); rev <= 100_000; rev++ {
		assert.True(t, q.push(&entry{Event: Event{Revision: rev}}))
		assert.Equal(t, next, q.pop().Revision, "order kept across compactions")
		next++
	}
	assert.Equal(t, 100, q.len())
	assert.LessOrEqual(t, cap(q.items), 1024, "the read part is reused, not grown")
}
