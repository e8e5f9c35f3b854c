package plugin

import (
	"context"
	"io"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/podkit/podkit/cni/netns"
)

// nsExec runs plugin binaries with the node's network namespace as their
// own: the child is forked from a locked thread switched into that
// namespace, and a new process inherits the forking thread's namespaces.
// Everything else is delegated to the wrapped Exec.
type nsExec struct {
	invoke.Exec
	nsPath string
}

var _ invoke.Exec = (*nsExec)(nil)

func (e *nsExec) ExecPlugin(ctx context.Context, pluginPath string, stdin []byte, environ []string) ([]byte, error) {
	var out []byte
	err := netns.Do(e.nsPath, func() error {
		var err error
		out, err = e.Exec.ExecPlugin(ctx, pluginPath, stdin, environ)
		return err
	})
	return out, err
}

// rawExec is libcni's default executor with plugin stderr sent to w.
func rawExec(w io.Writer) invoke.Exec {
	return &invoke.DefaultExec{RawExec: &invoke.RawExec{Stderr: w}, PluginDecoder: version.PluginDecoder{}}
}
