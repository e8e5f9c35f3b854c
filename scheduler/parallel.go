package scheduler

import (
	"math"
	"sync"
	"sync/atomic"
)

// parallelizer runs per-node work on at most workers goroutines, in chunks
// of about √n items taken from a shared counter.
type parallelizer struct{ workers int }

func chunkSize(n, workers int) int {
	s := int(math.Sqrt(float64(n)))
	if r := n/workers + 1; s > r {
		s = r
	}
	return max(s, 1)
}

// until calls fn(i) for i in [0, n) until fn returns true (stop); items
// already started finish. Small inputs run on the calling goroutine.
func (p parallelizer) until(n int, fn func(i int) (stop bool)) {
	if n <= 0 {
		return
	}
	workers := max(p.workers, 1)
	chunk := chunkSize(n, workers)
	chunks := (n + chunk - 1) / chunk
	workers = min(workers, chunks)
	if workers <= 1 || n < 8 {
		for i := 0; i < n; i++ {
			if fn(i) {
				return
			}
		}
		return
	}
	var next atomic.Int64
	var stopped atomic.Bool
	var wg sync.WaitGroup
	wg.Add(workers)
	for range workers {
		go func() {
			defer wg.Done()
			for !stopped.Load() {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				for i := c * chunk; i < min((c+1)*chunk, n); i++ {
					if fn(i) {
						stopped.Store(true)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}
