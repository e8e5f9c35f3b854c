package podkit

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildPodkitInit builds sandbox/cmd/podkit-init into dir.
func buildPodkitInit(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "podkit-init")
	if out, err := exec.Command("go", "build", "-o", bin, "./sandbox/cmd/podkit-init").CombinedOutput(); err != nil {
		t.Fatalf("building podkit-init: %v\n%s", err, out)
	}
	return bin
}

// supervisorExe is the executable of the supervisor serving runDir.
func supervisorExe(t *testing.T, runDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "supervisor.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	require.NoError(t, err)
	return exe
}

func TestNodeSupervisorFromPodkitInit(t *testing.T) {
	init := buildPodkitInit(t)
	e := newSvcEnv(t, upstreamDNS(t, "upstream.example.", netip.MustParseAddr("192.0.2.79")), func(nc *NodeConfig) {
		nc.InitBinary, nc.SupervisorBinary = init, init
	})
	assert.Equal(t, init, supervisorExe(t, e.runDir), "the small binary runs the supervisor")
	e.createPods(backend("sup", e.c.Image(svcImage), map[string]string{"app": "sup"}))
	e.waitReady("sup")
	// An exec through the supervisor (podkit-init's exec helper) reaches
	// the container's server.
	out, err := e.exec("sup", "get", "http://127.0.0.1:8080/", "1")
	require.NoError(t, err)
	assert.Contains(t, out, "host sup")
	e.stop()
	e.assertClean()
}

func TestNodeSupervisorFallsBackToOwnBinary(t *testing.T) {
	// An executable that cannot be the supervisor (as an older podkit-init
	// next to a newer podkit): the node re-executes its own binary.
	e := newSvcEnv(t, upstreamDNS(t, "upstream.example.", netip.MustParseAddr("192.0.2.80")), func(nc *NodeConfig) {
		nc.SupervisorBinary = "/bin/false"
	})
	self, err := os.Executable()
	require.NoError(t, err)
	assert.Equal(t, self, supervisorExe(t, e.runDir))
	e.stop()
	e.assertClean()
}
