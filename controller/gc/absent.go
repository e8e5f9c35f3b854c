package gc

import (
	"container/list"
	"sync"
)

// absentCache remembers owners verified absent by a live read, so the
// dependents of a deleted owner do not each read it again. It is bounded:
// the least recently added references are forgotten first. Forgetting only
// costs a read.
type absentCache struct {
	mu    sync.Mutex
	max   int
	order *list.List
	items map[objectReference]*list.Element
}

func newAbsentCache(max int) *absentCache {
	return &absentCache{max: max, order: list.New(), items: map[objectReference]*list.Element{}}
}

func (c *absentCache) add(r objectReference) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[r]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.items[r] = c.order.PushFront(r)
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(objectReference))
	}
}

func (c *absentCache) has(r objectReference) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.items[r]
	return ok
}
