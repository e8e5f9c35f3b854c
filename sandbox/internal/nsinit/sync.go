package nsinit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// The parent and a child talk over one unix stream socket, the child's end
// at syncFD. The parent sends one JSON message, which is also the child's
// signal to proceed (it is sent only after the child was placed in its
// cgroup); the child answers with one JSON reply, or with EOF: the init
// closes the socket after a successful reply, the exec helper's end is
// close-on-exec so EOF there means execve succeeded, and EOF before any
// reply means the child died.
const syncFD = 3

// initMessage configures the container init.
type initMessage struct {
	Spec     *specs.Spec `json:"spec"`
	StateDir string      `json:"stateDir"`
}

// execMessage configures the exec helper. Namespace fds are inherited
// after the sync socket, in the order of Namespaces.
type execMessage struct {
	Process     *specs.Process `json:"process"`
	Namespaces  []string       `json:"namespaces"` // specs.LinuxNamespaceType values
	OOMScoreAdj *int           `json:"oomScoreAdj,omitempty"`
}

// reply is a child's answer. An empty reply from the init means ready.
type reply struct {
	Error string `json:"error,omitempty"`
	// Exec marks a failure to execute the process (ErrExec), as opposed
	// to a setup failure (ErrSetup).
	Exec bool `json:"exec,omitempty"`
	// Code is the status the child exits with.
	Code int `json:"code,omitempty"`
}

func (r *reply) err() error {
	if r.Exec {
		return fmt.Errorf("%w: %s", ErrExec, r.Error)
	}
	return fmt.Errorf("%w: %s", ErrSetup, r.Error)
}

// newSyncPair returns the parent's end (non-blocking, so reads honour
// deadlines) and the child's end of a close-on-exec socket pair.
func newSyncPair() (parent, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "sync-parent"), os.NewFile(uintptr(fds[1]), "sync-child"), nil
}

// exchange sends msg and waits for the child's reply. It returns a nil
// reply when the child closed its end without replying. ctx interrupts the
// wait.
func exchange(ctx context.Context, f *os.File, msg any) (*reply, error) {
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encode child config: %w", err)
	}
	if _, err := f.Write(b); err != nil && !errors.Is(err, unix.EPIPE) {
		return nil, fmt.Errorf("send child config: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var r reply
	err = json.NewDecoder(f).Decode(&r)
	switch {
	case err == nil:
		return &r, nil
	case errors.Is(err, io.EOF), errors.Is(err, unix.ECONNRESET):
		return nil, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	default:
		return nil, fmt.Errorf("read child reply: %w", err)
	}
}

// childSync returns the child's end of the socket.
func childSync() *os.File { return os.NewFile(syncFD, "sync") }

// readMessage decodes the parent's message.
func readMessage(f *os.File, v any) error {
	if err := json.NewDecoder(f).Decode(v); err != nil {
		return fmt.Errorf("read config from parent: %w", err)
	}
	return nil
}

// writeReply sends the child's reply; a parent that is gone is ignored.
func writeReply(f *os.File, r reply) {
	b, _ := json.Marshal(r)
	_, _ = f.Write(b)
}
