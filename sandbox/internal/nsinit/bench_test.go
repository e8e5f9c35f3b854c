package nsinit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// BenchmarkCreateStart measures Create + Start of a container whose
// entrypoint exits at once, until it is reaped: the native counterpart of
// `crun run` on the same rootfs. "new-namespaces" makes every namespace
// (as crun with a default spec does); "pod-namespaces" joins pinned
// network, IPC and UTS namespaces, as a pod's containers do;
// "small-binary" is pod-namespaces with the init re-executing
// sandbox/cmd/podkit-init instead of the (larger) test binary.
func BenchmarkCreateStart(b *testing.B) {
	r := newRootfs(b)
	pod := testSpec(r.path, "exit", "0")
	setNamespace(pod, specs.NetworkNamespace, pinNS(b, unix.CLONE_NEWNET, nil), false)
	setNamespace(pod, specs.IPCNamespace, pinNS(b, unix.CLONE_NEWIPC, nil), false)
	setNamespace(pod, specs.UTSNamespace, pinUTS(b, "bench"), false)
	small := filepath.Join(b.TempDir(), "podkit-init")
	out, err := exec.Command("go", "build", "-o", small, "../../cmd/podkit-init").CombinedOutput()
	require.NoError(b, err, "%s", out)
	for _, bc := range []struct {
		name   string
		spec   *specs.Spec
		binary string
	}{
		{"new-namespaces", testSpec(r.path, "exit", "0"), ""},
		{"pod-namespaces", pod, ""},
		{"small-binary", pod, small},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			ctx := context.Background()
			for i := 0; b.Loop(); i++ {
				state := filepath.Join(dir, "c"+strconv.Itoa(i))
				if err := os.Mkdir(state, 0o700); err != nil {
					b.Fatal(err)
				}
				pid, err := Create(ctx, CreateConfig{Spec: bc.spec, StateDir: state, Binary: bc.binary})
				if err != nil {
					b.Fatal(err)
				}
				if err := Start(ctx, state); err != nil {
					b.Fatal(err)
				}
				var ws unix.WaitStatus
				_, err = unix.Wait4(pid, &ws, 0, nil)
				require.NoError(b, err)
				if ws.ExitStatus() != 0 {
					b.Fatalf("exit status %v", ws)
				}
			}
		})
	}
}

// BenchmarkCrunRun runs the "new-namespaces" container of
// BenchmarkCreateStart with `crun run` (or `runc run`, see -run), for
// comparison in the same process. Skipped when the runtime is missing.
func BenchmarkCrunRun(b *testing.B) {
	for _, runtime := range []string{"crun", "runc"} {
		b.Run(runtime, func(b *testing.B) {
			bin, err := exec.LookPath(runtime)
			if err != nil {
				b.Skipf("%s not installed", runtime)
			}
			r := newRootfs(b)
			bundle := b.TempDir()
			spec := testSpec(r.path, "exit", "0")
			spec.Version = "1.0.2" // Debian 12's crun rejects newer versions
			cfg, err := json.Marshal(spec)
			require.NoError(b, err)
			require.NoError(b, os.WriteFile(filepath.Join(bundle, "config.json"), cfg, 0o644))
			root := b.TempDir()
			for i := 0; b.Loop(); i++ {
				id := fmt.Sprintf("nsinit-bench-%d-%d", os.Getpid(), i)
				args := []string{"--root", root}
				if runtime == "crun" {
					// Like CreateStart (no Place), no cgroup work; crun also
					// refuses cgroup v1 hybrid hosts otherwise.
					args = append(args, "--cgroup-manager=disabled")
				}
				args = append(args, "run", "--bundle", bundle, id)
				out, err := exec.Command(bin, args...).CombinedOutput()
				if bytes.Contains(out, []byte("hybrid mode not supported")) {
					b.Skipf("%s: %s", runtime, out) // crun 1.8 on a cgroup v1 host with v2 controllers
				}
				if err != nil {
					b.Fatalf("%s run: %v: %s", runtime, err, out)
				}
			}
		})
	}
}
