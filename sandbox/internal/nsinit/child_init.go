package nsinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// initMain is the container init (ModeInit). It waits for its config
// (sent after it was placed in its cgroup), sets the container up, reports
// ready, waits on the exec FIFO and executes the process.
func initMain() {
	conn := childSync()
	var msg initMessage
	if err := readMessage(conn, &msg); err != nil {
		fmt.Fprintf(os.Stderr, "nsinit: %v\n", err)
		os.Exit(1)
	}
	st, err := setupInit(&msg)
	if err != nil {
		writeReply(conn, reply{Error: err.Error(), Code: 1})
		os.Exit(1)
	}
	writeReply(conn, reply{})
	conn.Close()

	var b [1]byte
	for {
		n, err := unix.Read(st.fifo, b[:])
		if n == 1 {
			break
		}
		if !errors.Is(err, unix.EINTR) {
			os.Exit(1)
		}
	}
	xerr := execProcess(msg.Spec.Process, st.env)
	_, _ = unix.Write(st.errFile, []byte(xerr.msg+"\n"))
	os.Exit(xerr.code)
}

// initState is what the init keeps from setup for the exec.
type initState struct {
	fifo    int // exec FIFO, read-write, close-on-exec
	errFile int // exec-error, close-on-exec
	env     []string
}

// setupInit does everything but the exec, in the order: cgroup namespace,
// hostname, sysctls, OOM score, state files, root filesystem, identity.
func setupInit(m *initMessage) (*initState, error) {
	spec := m.Spec
	if spec == nil || spec.Process == nil || spec.Root == nil {
		return nil, fmt.Errorf("%w: incomplete spec", ErrInvalidSpec)
	}
	l := spec.Linux
	unix.Umask(0)
	if newNamespace(l, specs.CgroupNamespace) {
		if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
			return nil, fmt.Errorf("unshare cgroup namespace: %w", err)
		}
	}
	if err := setNames(spec); err != nil {
		return nil, err
	}
	if l != nil {
		for k, v := range l.Sysctl {
			if err := writeSysctl(k, v); err != nil {
				return nil, err
			}
		}
	}
	if adj := spec.Process.OOMScoreAdj; adj != nil {
		if err := os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(*adj)), 0); err != nil {
			return nil, fmt.Errorf("set oom_score_adj %d: %w", *adj, err)
		}
	}
	st := &initState{}
	var err error
	errPath := filepath.Join(m.StateDir, ExecErrorName)
	if st.errFile, err = unix.Open(errPath, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644); err != nil {
		return nil, fmt.Errorf("open %s: %w", errPath, err)
	}
	fifo := filepath.Join(m.StateDir, ExecFIFOName)
	if st.fifo, err = unix.Open(fifo, unix.O_RDWR|unix.O_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("open exec fifo %s: %w", fifo, err)
	}
	if err := setupRootfs(spec); err != nil {
		return nil, err
	}
	st.env = processEnv(spec.Process.Env, spec.Process.User.UID)
	if err := applyProcess(spec.Process); err != nil {
		return nil, err
	}
	return st, nil
}

// setNames sets the hostname and domain name in a new UTS namespace. A
// joined one (the pod's) is left alone: the sandbox named it.
func setNames(spec *specs.Spec) error {
	if !newNamespace(spec.Linux, specs.UTSNamespace) {
		return nil
	}
	if spec.Hostname != "" {
		if err := unix.Sethostname([]byte(spec.Hostname)); err != nil {
			return fmt.Errorf("set hostname %q: %w", spec.Hostname, err)
		}
	}
	if spec.Domainname != "" {
		if err := unix.Setdomainname([]byte(spec.Domainname)); err != nil {
			return fmt.Errorf("set domain name %q: %w", spec.Domainname, err)
		}
	}
	return nil
}

// writeSysctl sets a namespaced sysctl. /proc/sys resolves net.* and the
// IPC keys in the writer's namespaces, so the host's procfs is fine here.
// Keys use dots or, when a component contains dots, slashes.
func writeSysctl(key, value string) error {
	rel := key
	if !strings.Contains(key, "/") {
		rel = strings.ReplaceAll(key, ".", "/")
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("%w: sysctl key %q", ErrInvalidSpec, key)
		}
	}
	p := "/proc/sys/" + rel
	if err := os.WriteFile(p, []byte(value), 0); err != nil {
		return fmt.Errorf("set sysctl %s=%s: %w", key, value, err)
	}
	return nil
}
