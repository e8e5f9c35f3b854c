package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	e := NewExpectations(clk)
	assert.True(t, e.Satisfied("ns/a"), "no record")

	e.ExpectCreations("ns/a", 3)
	assert.False(t, e.Satisfied("ns/a"))
	e.CreationObserved("ns/a")
	e.CreationObserved("ns/a")
	assert.False(t, e.Satisfied("ns/a"))
	add, del, ok := e.Get("ns/a")
	assert.True(t, ok)
	assert.EqualValues(t, 1, add)
	assert.EqualValues(t, 0, del)
	e.CreationObserved("ns/a")
	assert.True(t, e.Satisfied("ns/a"))
	e.CreationObserved("ns/a") // extra observations are harmless
	assert.True(t, e.Satisfied("ns/a"))

	e.ExpectCreations("ns/b", 2)
	e.Lower("ns/b", 2, 0) // the creates failed
	assert.True(t, e.Satisfied("ns/b"))

	e.ExpectDeletions("ns/c", 1)
	e.Raise("ns/c", 0, 1)
	e.DeletionObserved("ns/c")
	assert.False(t, e.Satisfied("ns/c"))
	clk.Step(ExpectationsTimeout + time.Second)
	assert.True(t, e.Satisfied("ns/c"), "stale expectations stop blocking")

	e.Delete("ns/c")
	_, _, ok = e.Get("ns/c")
	assert.False(t, ok)
	e.CreationObserved("ns/unknown") // no record: no-op
	assert.True(t, e.Satisfied("ns/unknown"))
}

func TestUIDTrackingExpectations(t *testing.T) {
	e := NewUIDTrackingExpectations(clocktesting.NewFakeClock(t0))
	e.ExpectDeletions("ns/rs", []string{"ns/p1", "ns/p2"})
	assert.False(t, e.Satisfied("ns/rs"))
	e.DeletionObserved("ns/rs", "ns/p1")
	e.DeletionObserved("ns/rs", "ns/p1") // terminating, then gone: counted once
	e.DeletionObserved("ns/rs", "ns/other")
	assert.False(t, e.Satisfied("ns/rs"))
	e.DeletionObserved("ns/rs", "ns/p2")
	assert.True(t, e.Satisfied("ns/rs"))
	e.Delete("ns/rs")
	assert.True(t, e.Satisfied("ns/rs"))
}
