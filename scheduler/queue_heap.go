package scheduler

import (
	"container/heap"

	"k8s.io/apimachinery/pkg/types"
)

// podHeap is a heap of queued pods with O(log n) update and delete by UID.
type podHeap struct {
	items []*QueuedPodInfo
	index map[types.UID]int
	less  func(a, b *QueuedPodInfo) bool
}

func newPodHeap(less func(a, b *QueuedPodInfo) bool) *podHeap {
	return &podHeap{index: map[types.UID]int{}, less: less}
}

// heap.Interface over the items; index tracks positions.
type podHeapImpl podHeap

func (h *podHeapImpl) Len() int           { return len(h.items) }
func (h *podHeapImpl) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeapImpl) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[h.items[i].Pod.UID] = i
	h.index[h.items[j].Pod.UID] = j
}
func (h *podHeapImpl) Push(x any) {
	p := x.(*QueuedPodInfo)
	h.index[p.Pod.UID] = len(h.items)
	h.items = append(h.items, p)
}
func (h *podHeapImpl) Pop() any {
	last := len(h.items) - 1
	p := h.items[last]
	h.items[last] = nil
	h.items = h.items[:last]
	delete(h.index, p.Pod.UID)
	return p
}

func (h *podHeap) Len() int { return len(h.items) }

// get returns the queued pod with uid.
func (h *podHeap) get(uid types.UID) (*QueuedPodInfo, bool) {
	i, ok := h.index[uid]
	if !ok {
		return nil, false
	}
	return h.items[i], true
}

// addOrUpdate inserts p, or replaces the entry with the same UID.
func (h *podHeap) addOrUpdate(p *QueuedPodInfo) {
	if i, ok := h.index[p.Pod.UID]; ok {
		h.items[i] = p
		heap.Fix((*podHeapImpl)(h), i)
		return
	}
	heap.Push((*podHeapImpl)(h), p)
}

// delete removes the entry with uid, reporting whether it was present.
func (h *podHeap) delete(uid types.UID) bool {
	i, ok := h.index[uid]
	if !ok {
		return false
	}
	heap.Remove((*podHeapImpl)(h), i)
	return true
}

// peek returns the head without removing it.
func (h *podHeap) peek() *QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

// pop removes and returns the head.
func (h *podHeap) pop() *QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return heap.Pop((*podHeapImpl)(h)).(*QueuedPodInfo)
}

// list returns the entries in heap order (not sorted).
func (h *podHeap) list() []*QueuedPodInfo { return h.items }
