package nsinit

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// nsFlags maps the spec's namespace types to clone/setns flags.
var nsFlags = map[specs.LinuxNamespaceType]int{
	specs.PIDNamespace:     unix.CLONE_NEWPID,
	specs.NetworkNamespace: unix.CLONE_NEWNET,
	specs.MountNamespace:   unix.CLONE_NEWNS,
	specs.IPCNamespace:     unix.CLONE_NEWIPC,
	specs.UTSNamespace:     unix.CLONE_NEWUTS,
	specs.CgroupNamespace:  unix.CLONE_NEWCGROUP,
	specs.UserNamespace:    unix.CLONE_NEWUSER,
	specs.TimeNamespace:    unix.CLONE_NEWTIME,
}

// nsJoin is a namespace to enter with setns.
type nsJoin struct {
	typ  specs.LinuxNamespaceType
	path string
	flag int
}

// nsPlan is how the init gets its namespaces: clone flags for new ones,
// setns on the forking thread for joined ones. A new cgroup namespace is
// unshared by the init itself after it was placed in its cgroup, so that
// the namespace's root is the container's cgroup.
type nsPlan struct {
	clone uintptr
	joins []nsJoin
}

// planNamespaces checks spec.Linux.Namespaces. The mount namespace is
// always new; user and time namespaces are not supported.
func planNamespaces(l *specs.Linux) (nsPlan, error) {
	p := nsPlan{clone: unix.CLONE_NEWNS}
	if l == nil {
		return p, nil
	}
	seen := make(map[specs.LinuxNamespaceType]bool)
	for _, ns := range l.Namespaces {
		flag, ok := nsFlags[ns.Type]
		if !ok {
			return p, fmt.Errorf("%w: unknown namespace type %q", ErrInvalidSpec, ns.Type)
		}
		if seen[ns.Type] {
			return p, fmt.Errorf("%w: namespace %q listed twice", ErrInvalidSpec, ns.Type)
		}
		seen[ns.Type] = true
		switch {
		case ns.Type == specs.UserNamespace || ns.Type == specs.TimeNamespace:
			return p, fmt.Errorf("%w: %s namespaces: %w", ErrInvalidSpec, ns.Type, errors.ErrUnsupported)
		case ns.Type == specs.MountNamespace:
			if ns.Path != "" {
				return p, fmt.Errorf("%w: joining mount namespace %s: %w", ErrInvalidSpec, ns.Path, errors.ErrUnsupported)
			}
		case ns.Path != "":
			p.joins = append(p.joins, nsJoin{typ: ns.Type, path: ns.Path, flag: flag})
		case ns.Type == specs.CgroupNamespace:
			// unshared by the init after placement
		default:
			p.clone |= uintptr(flag)
		}
	}
	return p, nil
}

// newNamespace reports whether the spec asks for a new namespace of typ.
func newNamespace(l *specs.Linux, typ specs.LinuxNamespaceType) bool {
	if l == nil {
		return typ == specs.MountNamespace
	}
	for _, ns := range l.Namespaces {
		if ns.Type == typ {
			return ns.Path == ""
		}
	}
	return typ == specs.MountNamespace
}

// openJoins opens the namespace files of joins. The caller closes them.
func openJoins(joins []nsJoin) ([]int, error) {
	fds := make([]int, 0, len(joins))
	for _, j := range joins {
		fd, err := unix.Open(j.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			closeAll(fds)
			return nil, fmt.Errorf("open %s namespace: %w", j.typ, &os.PathError{Op: "open", Path: j.path, Err: err})
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// forkJoined runs fork on a fresh OS thread that first entered the
// namespaces (fds[i] of joins[i]). Net, IPC, UTS and cgroup namespaces are
// inherited by the forked child; a joined PID namespace becomes the
// child's (setns sets the namespace for children). The thread is never
// unlocked: when the goroutine ends the runtime discards it instead of
// reusing a thread in foreign namespaces.
func forkJoined(joins []nsJoin, fds []int, fork func() (int, error)) (int, error) {
	if len(joins) == 0 {
		return fork()
	}
	type result struct {
		pid int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		for i, j := range joins {
			if err := unix.Setns(fds[i], j.flag); err != nil {
				ch <- result{err: fmt.Errorf("join %s namespace %s: %w", j.typ, j.path, err)}
				return
			}
		}
		pid, err := fork()
		ch <- result{pid, err}
	}()
	r := <-ch
	return r.pid, r.err
}
