package native

import (
	"context"

	"github.com/podkit/podkit/sandbox/internal/launch"
	"github.com/podkit/podkit/sandbox/internal/nsinit"
)

// Init runs the re-exec'd modes of this package — the supervisor, the
// container init, the exec helper and the Go pause — and never returns in
// them; in a normal process it returns at once. Call it first thing in
// main (and in TestMain of tests that use a Runtime). The small
// podkit-init runs the same modes (package launch), so it can stand in
// for this binary as Config.InitBinary and Config.Binary.
func Init() { launch.Main() }

// startNative releases a created native container into its entrypoint.
func startNative(ctx context.Context, dir string) error {
	return nsinit.Start(ctx, dir)
}
