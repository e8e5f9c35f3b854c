package e2e

import (
	"bufio"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/internal/testutil"
)

// birthOrder is the birth trace of the demo's web pod, step by step.
var birthOrder = []string{"admitted", "stored", "scheduled", "bound", "seen", "cgroups", "volumes", "sandbox", "network",
	"image:setup", "init:setup", "image:web", "container:web", "ready"}

var traceRow = regexp.MustCompile(`^\s+(\S+)\s+(-?\d+\.\d{3})\s+(-?\d+\.\d{3})\s`)

// assertBirthTrace checks a drawn waterfall lists the web pod's steps in
// birth order with non-negative durations.
func assertBirthTrace(t *testing.T, out string) {
	t.Helper()
	var names []string
	prev := 0.0
	for _, l := range strings.Split(out, "\n") {
		m := traceRow.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		at, _ := strconv.ParseFloat(m[2], 64)
		took, _ := strconv.ParseFloat(m[3], 64)
		assert.GreaterOrEqual(t, took, 0.0, "step %s", m[1])
		assert.GreaterOrEqual(t, at, prev, "step %s", m[1])
		prev = at
		names = append(names, m[1])
	}
	assert.Equal(t, birthOrder, names, out)
}

// TestDemo runs `podkit demo` as a process up to the birth timeline it
// prints (the example manifests applied, every pod Running and Ready, the
// web pod's waterfall), draws the same pod with `podkit trace` (text and
// SVG) against the live cluster, then stops it with SIGTERM and checks the
// host is clean.
func TestDemo(t *testing.T) {
	testutil.RequireRoot(t)
	dataDir := t.TempDir()
	prefix := "e2e-demo-" + cnitest.RandomHex(3)
	cmd := exec.Command(podkitBinary, "demo", "--data-dir", dataDir, "--port", "-1", "--node-name-prefix", prefix,
		"--cluster-cidr", "10.248.0.0/16")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stop := func() {
		select {
		case <-done:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			<-done
			t.Error("podkit demo did not stop within 2 minutes of SIGTERM")
		}
	}
	t.Cleanup(stop)

	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout)
	}()
	var out strings.Builder
	deadline := time.After(5 * time.Minute)
read:
	for {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "podkit demo exited early; output:\n%s", out.String())
			out.WriteString(l + "\n")
			if strings.HasPrefix(l, "Ctrl-C stops every pod") {
				break read
			}
		case <-deadline:
			t.Fatalf("podkit demo printed no timeline within 5 minutes; output:\n%s", out.String())
		}
	}
	printed := out.String()
	t.Log(printed)
	assert.Contains(t, printed, "applied deployment/hello, pod/web")
	assert.Regexp(t, `(?m)^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES$`, printed)
	assert.Regexp(t, `(?m)^web\s+1/1\s+Running\s+0\s+\S+\s+10\.248\.\d+\.\d+\s+`+prefix+`-1\s`, printed)
	assert.Len(t, regexp.MustCompile(`(?m)^hello-\S+\s+1/1\s+Running\s`).FindAllString(printed, -1), 3, "the Deployment's 3 replicas")
	assert.Regexp(t, `birth of pod default/web on `+prefix+`-1: [\d.]+ ms from admitted to ready`, printed)
	assertBirthTrace(t, printed)

	// podkit trace against the live cluster, as a user runs it.
	svg := filepath.Join(t.TempDir(), "web.svg")
	tr := exec.Command(podkitBinary, "trace", "--kubeconfig", filepath.Join(dataDir, "kubeconfig"), "-n", "default", "web", "--svg", svg)
	b, err := tr.CombinedOutput()
	require.NoError(t, err, string(b))
	assertBirthTrace(t, string(b))
	f, err := os.Open(svg)
	require.NoError(t, err)
	defer f.Close()
	d := xml.NewDecoder(f)
	bars := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the SVG is well-formed XML")
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			bars++
		}
	}
	assert.Equal(t, len(birthOrder)+1, bars, "a background and one bar per step")

	stop()
	assertNodeGone(t, prefix+"-1")
	left, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dataDir))
	require.NoError(t, err)
	assert.Empty(t, left, "mounts left under the data dir")
}
