// Package examples holds runnable programs, one per folder, that compose
// podkit's stages into custom pipelines: a custom Scorer, a sidecar-injecting
// Admitter, a custom Networker, an embedded test cluster and a large
// simulated cluster. Each has a test that runs it.
package examples
