// Package storagetest is the conformance suite of the storage.Store
// contract (step 4 of the birth sequence): everything the REST handlers,
// informers and controllers rely on, checked with real Kubernetes objects.
//
// Every built-in backend (memory, bolt) runs RunConformance and
// RunBenchmarks, and a new backend (an etcd one, a user's) should run them
// unchanged:
//
//	func TestConformance(t *testing.T) {
//		storagetest.RunConformance(t, newStore, storagetest.WithTuning(newTunedStore))
//	}
//
// The few checks that need a small watch history, a small watcher buffer or
// a short bookmark interval ask the backend for a store so tuned through
// WithTuning; without it they are skipped.
package storagetest
