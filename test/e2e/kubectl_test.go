package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/internal/testutil"
)

// kubectlMinors are the kubectl versions every kubectl test runs with: a
// recent one and the oldest the server supports.
var kubectlMinors = []int{32, 27}

// kubectlTimeout bounds one kubectl invocation.
const kubectlTimeout = 30 * time.Second

// kubectl runs one real kubectl binary against one apiServer, with a
// private HOME and discovery cache and no proxy settings.
type kubectl struct {
	t     *testing.T
	bin   string
	Minor int
	env   []string
}

// result is a finished kubectl invocation.
type result struct {
	Args   []string
	Stdout string
	Stderr string
	Code   int // exit code; -1 if it did not exit normally
}

func (r result) String() string {
	return fmt.Sprintf("kubectl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.Args, " "), r.Code, r.Stdout, r.Stderr)
}

// forEachKubectl runs fn as a parallel subtest per kubectl version, each
// against its own fresh API server.
func forEachKubectl(t *testing.T, fn func(t *testing.T, k *kubectl, srv *apiServer)) {
	t.Helper()
	for _, minor := range kubectlMinors {
		t.Run(fmt.Sprintf("kubectl-1.%d", minor), func(t *testing.T) {
			t.Parallel()
			bin := testutil.Kubectl(t, minor)
			srv := startAPIServer(t)
			fn(t, newKubectl(t, bin, minor, srv), srv)
		})
	}
}

// newKubectl runs bin (kubectl 1.minor) against srv.
func newKubectl(t *testing.T, bin string, minor int, srv *apiServer) *kubectl {
	t.Helper()
	home := t.TempDir()
	return &kubectl{
		t:     t,
		bin:   bin,
		Minor: minor,
		env: []string{
			"PATH=/usr/bin:/bin", // kubectl diff runs diff(1)
			"HOME=" + home,
			"KUBECONFIG=" + srv.Kubeconfig,
			"NO_PROXY=127.0.0.1",
		},
	}
}

// In returns a copy of k that reports to t (for subtests).
func (k *kubectl) In(t *testing.T) *kubectl {
	c := *k
	c.t = t
	return &c
}

// Run runs kubectl with args and returns whatever happened.
func (k *kubectl) Run(args ...string) result { return k.RunStdin("", args...) }

// RunStdin runs kubectl with stdin.
func (k *kubectl) RunStdin(stdin string, args ...string) result {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(k.t.Context(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env = k.env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{Args: args, Stdout: stdout.String(), Stderr: stderr.String(), Code: cmd.ProcessState.ExitCode()}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		k.t.Fatalf("running kubectl %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		k.t.Fatalf("kubectl %s timed out after %s:\n%s", strings.Join(args, " "), kubectlTimeout, r)
	}
	return r
}

// OK runs kubectl, requires exit code 0 and returns stdout.
func (k *kubectl) OK(args ...string) string {
	k.t.Helper()
	r := k.Run(args...)
	require.Equal(k.t, 0, r.Code, "%s", r)
	return r.Stdout
}

// Fail runs kubectl and requires exit code 1 (what kubectl returns for
// server errors), returning the result.
func (k *kubectl) Fail(args ...string) result {
	k.t.Helper()
	r := k.Run(args...)
	require.Equal(k.t, 1, r.Code, "%s", r)
	return r
}

// stream is a kubectl process running in the background whose stdout is
// read line by line.
type stream struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan string
	done   chan struct{} // closed by Stop: the reader stops delivering
	mu     sync.Mutex
	seen   []string
	stderr strings.Builder
}

// Start runs kubectl in the background until the test ends (or Stop).
func (k *kubectl) Start(args ...string) *stream {
	k.t.Helper()
	cmd := exec.Command(k.bin, args...)
	cmd.Env = k.env
	s := &stream{t: k.t, cmd: cmd, lines: make(chan string, 256), done: make(chan struct{})}
	cmd.Stderr = &lockedWriter{mu: &s.mu, w: &s.stderr}
	out, err := cmd.StdoutPipe()
	require.NoError(k.t, err)
	require.NoError(k.t, cmd.Start(), "starting kubectl %v", args)
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case s.lines <- sc.Text():
			case <-s.done:
				return
			}
		}
	}()
	k.t.Cleanup(s.Stop)
	return s
}

// Stop kills the process (idempotent).
func (s *stream) Stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	close(s.done)
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// WaitLine returns the first unread line for which match is true, failing
// the test after timeout; the lines read so far appear in the failure.
func (s *stream) WaitLine(timeout time.Duration, what string, match func(line string) bool) string {
	s.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("kubectl %v ended before %s; output:\n%s\nstderr:\n%s", s.cmd.Args[1:], what, s.output(), s.errOutput())
			}
			s.mu.Lock()
			s.seen = append(s.seen, line)
			s.mu.Unlock()
			if match(line) {
				return line
			}
		case <-deadline:
			s.t.Fatalf("kubectl %v: no %s within %s; output:\n%s\nstderr:\n%s", s.cmd.Args[1:], what, timeout, s.output(), s.errOutput())
		}
	}
}

func (s *stream) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.seen, "\n")
}

func (s *stream) errOutput() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// fields splits a table row into its whitespace-separated cells.
func fields(line string) []string { return strings.Fields(line) }

// tableRow finds the row of table output whose first cell is name.
func tableRow(t *testing.T, out, name string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := fields(line); len(f) > 0 && f[0] == name {
			return f
		}
	}
	t.Fatalf("no row %q in:\n%s", name, out)
	return nil
}

// header returns the first line of table output.
func header(out string) string {
	line, _, _ := strings.Cut(out, "\n")
	return line
}

// writeFile writes data into a new file in a test temp dir.
func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(data), 0o600))
	return p
}
