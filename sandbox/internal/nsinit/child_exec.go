package nsinit

import (
	"fmt"
	"os"
	"strconv"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// execMain is the exec helper (ModeExec): it joins the container's
// namespaces on its exec thread, takes on the process's identity and execs
// the command. Its end of the sync socket is close-on-exec, so the parent
// reads EOF on success and a reply on failure.
func execMain() {
	conn := childSync()
	unix.CloseOnExec(syncFD)
	var msg execMessage
	if err := readMessage(conn, &msg); err != nil {
		fmt.Fprintf(os.Stderr, "nsinit: %v\n", err)
		os.Exit(1)
	}
	env, err := enterContainer(&msg)
	if err != nil {
		writeReply(conn, reply{Error: err.Error(), Code: 1})
		os.Exit(1)
	}
	xerr := execProcess(msg.Process, env)
	writeReply(conn, reply{Error: xerr.msg, Exec: true, Code: xerr.code})
	os.Exit(xerr.code)
}

// enterContainer joins the namespaces passed after the sync socket (the
// mount namespace last, after unsharing the filesystem attributes the Go
// runtime's threads share) and applies the process's identity.
func enterContainer(m *execMessage) ([]string, error) {
	if m.Process == nil || len(m.Process.Args) == 0 {
		return nil, fmt.Errorf("%w: no process", ErrInvalidSpec)
	}
	if adj := m.OOMScoreAdj; adj != nil {
		if err := os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(*adj)), 0); err != nil {
			return nil, fmt.Errorf("set oom_score_adj %d: %w", *adj, err)
		}
	}
	mnt := -1
	for i, name := range m.Namespaces {
		fd := syncFD + 1 + i
		typ := specs.LinuxNamespaceType(name)
		if typ == specs.MountNamespace {
			mnt = fd
			continue
		}
		flag, ok := nsFlags[typ]
		if !ok {
			return nil, fmt.Errorf("%w: namespace %q", ErrInvalidSpec, name)
		}
		if err := unix.Setns(fd, flag); err != nil {
			return nil, fmt.Errorf("join %s namespace: %w", typ, err)
		}
		unix.Close(fd)
	}
	if mnt >= 0 {
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			return nil, fmt.Errorf("unshare filesystem attributes: %w", err)
		}
		if err := unix.Setns(mnt, unix.CLONE_NEWNS); err != nil {
			return nil, fmt.Errorf("join mount namespace: %w", err)
		}
		unix.Close(mnt)
	}
	env := processEnv(m.Process.Env, m.Process.User.UID)
	if err := applyProcess(m.Process); err != nil {
		return nil, err
	}
	return env, nil
}
