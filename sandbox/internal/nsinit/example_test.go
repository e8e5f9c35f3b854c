package nsinit_test

import (
	"context"
	"fmt"
	"os"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/sandbox/internal/nsinit"
)

// Example creates a container from a spec, starts it and reaps it. The
// program's main (or TestMain) must begin with:
//
//	if nsinit.IsChildMode() {
//		nsinit.Main()
//	}
func Example() {
	ctx := context.Background()
	spec := &specs.Spec{
		Root:    &specs.Root{Path: "/run/podkit/containers/c1/rootfs"}, // a mounted rootfs
		Process: &specs.Process{Args: []string{"/bin/app"}, Env: []string{"PATH=/bin"}, Cwd: "/"},
		Mounts:  []specs.Mount{{Destination: "/proc", Type: "proc", Source: "proc"}},
		Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{
			{Type: specs.PIDNamespace},
			{Type: specs.MountNamespace},
			{Type: specs.NetworkNamespace, Path: "/run/podkit/sandboxes/s1/ns/net"}, // the pod's
		}},
	}
	pid, err := nsinit.Create(ctx, nsinit.CreateConfig{
		Spec:     spec,
		StateDir: "/run/podkit/containers/c1",
		Stdout:   os.Stdout,
		Stderr:   os.Stderr,
		Place:    nsinit.CgroupPlacer("/sys/fs/cgroup/kubepods/pod1/c1"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := nsinit.Start(ctx, "/run/podkit/containers/c1"); err != nil {
		fmt.Println(err) // for example: exec: "/bin/app": no such file or directory
	}
	var ws unix.WaitStatus
	_, _ = unix.Wait4(pid, &ws, 0, nil) // a supervisor reaps with wait4(-1)
	fmt.Println("exit status", ws.ExitStatus())
}
