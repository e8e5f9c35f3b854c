package ocispec_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/ocispec"
)

// ExampleGenerate builds the spec of a container that joins its pod's
// pinned network, IPC and UTS namespaces and runs as the image's "app"
// user.
func ExampleGenerate() {
	// A stand-in for the container's mounted overlay root filesystem.
	rootfs, err := os.MkdirTemp("", "rootfs-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(rootfs)
	_ = os.Mkdir(filepath.Join(rootfs, "etc"), 0o755)
	_ = os.WriteFile(filepath.Join(rootfs, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n"), 0o644)

	spec, err := ocispec.Generate(ocispec.Input{
		SandboxID:   "4f2a",
		ContainerID: "9c1e",
		Sandbox: &sandbox.SandboxConfig{
			Pod:      sandbox.PodMeta{Name: "web-0", Namespace: "default", UID: "7d1c"},
			Hostname: "web-0",
		},
		Container: &sandbox.ContainerConfig{
			Name:  "nginx",
			Image: "nginx:1.27",
			ImageConfig: sandbox.ImageConfig{
				Entrypoint: []string{"/docker-entrypoint.sh"},
				Cmd:        []string{"nginx", "-g", "daemon off;"},
				User:       "app",
				WorkingDir: "/srv",
			},
			Args:     []string{"nginx", "-T"},
			Security: sandbox.SecurityConfig{CapDrop: []string{"NET_RAW"}, NoNewPrivs: true},
		},
		RootfsPath:  rootfs,
		NetNS:       "/run/podkit/sandboxes/4f2a/ns/net",
		IPCNS:       "/run/podkit/sandboxes/4f2a/ns/ipc",
		UTSNS:       "/run/podkit/sandboxes/4f2a/ns/uts",
		CgroupsPath: "/kubepods/besteffort/pod7d1c/9c1e",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("args:", spec.Process.Args)
	fmt.Println("cwd:", spec.Process.Cwd)
	fmt.Println("user:", spec.Process.User.UID, spec.Process.User.GID)
	fmt.Println("env:", spec.Process.Env)
	fmt.Println("capabilities:", len(spec.Process.Capabilities.Bounding), "no_new_privs:", spec.Process.NoNewPrivileges)
	for _, ns := range spec.Linux.Namespaces {
		fmt.Printf("namespace %s %q\n", ns.Type, ns.Path)
	}
	fmt.Println("pod:", spec.Annotations[ocispec.AnnotationSandboxNamespace]+"/"+spec.Annotations[ocispec.AnnotationSandboxName])
	// Output:
	// args: [/docker-entrypoint.sh nginx -T]
	// cwd: /srv
	// user: 1000 1000
	// env: [PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOSTNAME=web-0]
	// capabilities: 13 no_new_privs: true
	// namespace pid ""
	// namespace ipc "/run/podkit/sandboxes/4f2a/ns/ipc"
	// namespace uts "/run/podkit/sandboxes/4f2a/ns/uts"
	// namespace mount ""
	// namespace network "/run/podkit/sandboxes/4f2a/ns/net"
	// pod: default/web-0
}
