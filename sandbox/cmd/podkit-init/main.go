// Command podkit-init is the small executable the native runtime can
// re-execute instead of the large podkit binary: for its container init,
// exec helper and Go pause (native.Config.InitBinary), and for the node's
// supervisor (native.Config.Binary). `podkit kubelet`, `podkit up` and
// `podkit demo` use it when it sits next to the podkit binary.
//
// Re-executing podkit itself works too, but then every container start
// pays for loading a large binary and running its package initialisers
// (about 3 ms, see docs/benchmarks.md), and the supervisor, which lives as
// long as the node's containers, keeps about 45 MiB of the binary's pages
// resident; run from podkit-init it keeps a few MiB. It links only the
// supervisor and the container init (package launch), not the runtime's
// network and cgroup stages nor anything of the API.
package main

import (
	"fmt"
	"os"

	"github.com/podkit/podkit/sandbox/internal/launch"
	"github.com/podkit/podkit/sandbox/internal/nsinit"
)

func main() {
	launch.Main()
	fmt.Fprintf(os.Stderr, "podkit-init: run by the native runtime only (%s=%s|%s|%s|%s)\n",
		nsinit.ModeEnv, "supervisor", nsinit.ModeInit, nsinit.ModeExec, nsinit.ModePause)
	os.Exit(2)
}
