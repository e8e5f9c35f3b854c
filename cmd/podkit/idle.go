package main

import "runtime/debug"

// idle hands the memory start-up used and dropped (building the demo
// images, the OpenAPI documents, the first lists) back to the kernel, so
// an idle cluster's RSS is what it keeps, not what it once needed; Go's
// scavenger would return it only over minutes.
func idle() { debug.FreeOSMemory() }
