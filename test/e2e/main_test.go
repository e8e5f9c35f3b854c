package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/podkit/podkit/sandbox/native"
)

// binaryEnv names a prebuilt podkit binary to test instead of building one.
const binaryEnv = "PODKIT_E2E_BINARY"

// buildTimeout bounds `go build` of the podkit binary: minutes on a cold
// build cache while other packages test on the same two cores.
const buildTimeout = 15 * time.Minute

// podkitBinary is the podkit binary under test, set once by TestMain before
// any test runs and only read afterwards. Empty under -short.
var podkitBinary string

func TestMain(m *testing.M) {
	native.Init() // in-process clusters (podkit.NewCluster) re-exec the test binary as their runtime
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if bin := os.Getenv(binaryEnv); bin != "" {
		podkitBinary = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "podkit-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: creating build dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin, err := buildPodkit(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	podkitBinary = bin
	return m.Run()
}

// buildPodkit builds ./cmd/podkit of this module into dir.
func buildPodkit(dir string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	bin := filepath.Join(dir, "podkit")
	// podkit, and what `make build` puts next to it: the small container
	// init and the demo image's program.
	for _, b := range []struct{ out, pkg string }{
		{bin, "github.com/podkit/podkit/cmd/podkit"},
		{filepath.Join(dir, "podkit-init"), "github.com/podkit/podkit/sandbox/cmd/podkit-init"},
		{filepath.Join(dir, "demo-web"), "github.com/podkit/podkit/examples/demo-web"},
	} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.out, b.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("building %s: %w", b.pkg, err)
		}
	}
	return bin, nil
}
