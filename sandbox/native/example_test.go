package native_test

import (
	"context"
	"fmt"

	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/native"
)

// A pod with one container on the native runtime. The program's main must
// call native.Init first (see the package doc); the rootfs mounts come from
// an overlay Snapshotter's Prepare.
func Example() {
	ctx := context.Background()
	r, err := native.New(ctx, native.Config{Root: "/run/podkit/example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	sb, err := r.RunPodSandbox(ctx, &sandbox.SandboxConfig{
		Pod:          sandbox.PodMeta{Name: "web", Namespace: "default", UID: "6f1c…"},
		LogDirectory: "/var/log/pods/default_web_6f1c…",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var rootfs []overlay.Mount // from Snapshotter.Prepare
	id, err := r.CreateContainer(ctx, sb.ID, &sandbox.ContainerConfig{
		Name: "app", Rootfs: rootfs, Command: []string{"/server"}, LogPath: "app/0.log",
	})
	if err == nil {
		err = r.StartContainer(ctx, id)
	}
	fmt.Println(sb.IPs, err)
}
