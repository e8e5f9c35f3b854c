// Command podkit-init is the small executable the native runtime can
// re-execute for its container init, exec helper and Go pause process
// (native.Config.InitBinary; `podkit kubelet` and `podkit up` use it when it
// sits next to the podkit binary). Re-executing podkit itself works too, but
// every container start then pays for loading a large binary and running
// its package initialisers (about 3 ms, see docs/benchmarks.md).
//
// It links only the container init, not the rest of podkit: it cannot run
// the supervisor, which stays a re-exec of the main binary.
package main

import "github.com/podkit/podkit/sandbox/internal/nsinit"

func main() { nsinit.Main() }
