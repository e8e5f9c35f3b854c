package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Timeouts of the process harness.
const (
	startTimeout = 20 * time.Second // until /readyz answers ok
	stopTimeout  = 15 * time.Second // SIGTERM until exit
	logTailLines = 80               // server log lines shown on failure
)

// apiServer is one `podkit apiserver` process and its data directory. It
// can be killed and restarted on the same directory.
type apiServer struct {
	t       *testing.T
	DataDir string
	Store   string
	// Kubeconfig is the file the server writes on every start.
	Kubeconfig string
	// URL and Port of the current (or last) process.
	URL  string
	Port int

	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
	waitErr error         // valid once exited is closed
}

type serverOption func(*apiServer)

// withMemoryStore runs the server on --store memory.
func withMemoryStore() serverOption { return withStore("memory") }

// withStore runs the server on --store store (e.g. etcd://…).
func withStore(store string) serverOption { return func(s *apiServer) { s.Store = store } }

// withDataDir gives the server dataDir; several servers sharing one share
// the cluster PKI (the first creates it).
func withDataDir(dataDir string) serverOption { return func(s *apiServer) { s.DataDir = dataDir } }

// startAPIServer starts a podkit apiserver on port 0 with a fresh data
// directory; the process is killed when the test ends.
func startAPIServer(t *testing.T, opts ...serverOption) *apiServer {
	t.Helper()
	require.NotEmpty(t, podkitBinary, "podkit binary not built (TestMain)")
	dir := t.TempDir()
	s := &apiServer{
		t:          t,
		DataDir:    filepath.Join(dir, "data"),
		Store:      "bolt",
		Kubeconfig: filepath.Join(dir, "kubeconfig"),
		logPath:    filepath.Join(dir, "apiserver.log"),
	}
	for _, o := range opts {
		o(s)
	}
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			s.dumpLog()
		}
	})
	s.launch(0)
	return s
}

// launch starts the process on port (0: a free one) and waits until it
// serves /readyz.
func (s *apiServer) launch(port int) {
	s.t.Helper()
	require.Nil(s.t, s.cmd, "server already running")
	// The server writes a fresh kubeconfig once it listens.
	if err := os.Remove(s.Kubeconfig); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.t.Fatalf("removing stale kubeconfig: %v", err)
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(s.t, err)
	defer logf.Close()
	fmt.Fprintf(logf, "--- launch on port %d at %s\n", port, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(podkitBinary, "apiserver",
		"--data-dir", s.DataDir,
		"--store", s.Store,
		"--bind-address", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--write-kubeconfig", s.Kubeconfig)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Dir(s.DataDir)}
	// The server dies with the test binary even if cleanups never run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(s.t, cmd.Start(), "starting podkit apiserver")
	s.cmd, s.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		s.waitErr = cmd.Wait()
		close(exited)
	}(s.exited)
	if err := s.waitReady(); err != nil {
		s.kill()
		s.dumpLog()
		s.t.Fatalf("podkit apiserver did not become ready: %v", err)
	}
}

// waitReady polls for the kubeconfig the server writes after listening,
// then for /readyz.
func (s *apiServer) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("process exited early: %v", s.waitErr)
		case <-time.After(20 * time.Millisecond):
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
		if err != nil {
			last = err
			continue
		}
		u, err := url.Parse(cfg.Host)
		if err != nil {
			return fmt.Errorf("kubeconfig server %q: %w", cfg.Host, err)
		}
		if u.Hostname() != "127.0.0.1" {
			return fmt.Errorf("kubeconfig server %q is not on 127.0.0.1", cfg.Host)
		}
		// The server serves HTTPS and authenticates everyone: /readyz with
		// the admin certificate and CA of the kubeconfig.
		cfg.Timeout = 2 * time.Second
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return fmt.Errorf("client from the kubeconfig: %w", err)
		}
		resp, err := hc.Get(cfg.Host + "/readyz")
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("/readyz: %s", resp.Status)
			continue
		}
		port, err := strconv.Atoi(u.Port())
		if err != nil {
			return fmt.Errorf("kubeconfig server %q has no port: %w", cfg.Host, err)
		}
		s.URL, s.Port = cfg.Host, port
		return nil
	}
	return fmt.Errorf("timed out after %s: %v", startTimeout, last)
}

// Kill sends SIGKILL (a crash) and waits for the process to be gone.
func (s *apiServer) Kill() {
	s.t.Helper()
	require.NotNil(s.t, s.cmd, "server not running")
	s.kill()
}

func (s *apiServer) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Stop sends SIGTERM and requires a clean exit (status 0) within
// stopTimeout.
func (s *apiServer) Stop() {
	s.t.Helper()
	require.NotNil(s.t, s.cmd, "server not running")
	require.NoError(s.t, s.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		s.kill()
		s.t.Fatalf("podkit apiserver did not exit within %s of SIGTERM", stopTimeout)
	}
	s.cmd = nil
	require.NoError(s.t, s.waitErr, "podkit apiserver exit after SIGTERM")
}

// Restart starts a new process on the same data directory, on port (0: a
// free one).
func (s *apiServer) Restart(port int) {
	s.t.Helper()
	s.launch(port)
}

// RESTConfig is a client config for the current process, with the
// admin credentials of the kubeconfig it wrote. It has no client timeout
// (watches stay open): bound calls with contexts.
func (s *apiServer) RESTConfig() *rest.Config {
	s.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	require.NoError(s.t, err)
	cfg.QPS, cfg.UserAgent = -1, "podkit-e2e"
	return cfg
}

// Client is a JSON clientset for the current process.
func (s *apiServer) Client() kubernetes.Interface {
	s.t.Helper()
	c, err := kubernetes.NewForConfig(s.RESTConfig())
	require.NoError(s.t, err)
	return c
}

// dumpLog logs the tail of the server's output.
func (s *apiServer) dumpLog() {
	data, err := os.ReadFile(s.logPath)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.t.Logf("reading apiserver log: %v", err)
		}
		return
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	s.t.Logf("podkit apiserver log (last %d lines):\n%s", len(lines), bytes.Join(lines, []byte("\n")))
}

// testContext is a context bounded by d and by the end of the test.
func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
