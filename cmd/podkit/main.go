// Command podkit runs podkit's components: the API server now, and the
// scheduler, kubelet, controllers and the all-in-one cluster as they land.
package main

import (
	"github.com/podkit/podkit/sandbox/native"

	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	native.Init() // the supervisor, container init and exec helper are re-execs of this binary
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "podkit:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	var verbose bool
	root := &cobra.Command{
		Use:           "podkit",
		Short:         "podkit: the birth of a Kubernetes Pod, as a library and a working cluster",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, args []string) {
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
		},
	}
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "log at debug level")
	root.AddCommand(newAPIServerCommand(), newSchedulerCommand(), newControllerManagerCommand(), newKubeletCommand(), newUpCommand(), newImageCommand(), newRegistryCommand())
	root.AddCommand(newDemoCommand(), newTraceCommand())
	return root
}
