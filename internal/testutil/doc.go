// Package testutil holds helpers shared by podkit's tests: root and tool
// requirements that skip off-root but fail under PODKIT_PRIVILEGED=require,
// the real kubectl binaries, and an in-process API server.
package testutil
