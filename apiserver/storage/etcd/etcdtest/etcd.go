package etcdtest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/podkit/podkit/internal/procstat"
	"github.com/podkit/podkit/internal/testutil"
)

// EtcdEnv names an etcd binary to use instead of the one on $PATH.
const EtcdEnv = "PODKIT_ETCD"

// Cluster is a set of etcd members run for one test. Its members are
// killed and their data removed in t.Cleanup.
type Cluster struct {
	Members []*Member
	// TLS holds the client credentials when the cluster serves TLS.
	TLS *TLSFiles
}

// Member is one etcd process.
type Member struct {
	Name    string
	DataDir string
	// ClientURL is where clients connect (http:// or https://).
	ClientURL string
	PeerURL   string

	bin  string
	args []string
	log  string

	mu  sync.Mutex
	cmd *exec.Cmd
	// exited is closed when the current process has been reaped.
	exited chan struct{}
}

// Option configures a cluster.
type Option func(*options)

type options struct {
	tls bool
}

// WithTLS makes every member serve clients over TLS and require a client
// certificate signed by the test CA (Cluster.TLS).
func WithTLS() Option { return func(o *options) { o.tls = true } }

// Start runs a one-member etcd and waits until it serves.
func Start(t testing.TB, opts ...Option) *Cluster { return StartCluster(t, 1, opts...) }

// StartCluster runs an n-member etcd cluster on loopback and waits until
// every member serves.
func StartCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	bin := binary(t)
	dir := t.TempDir()
	c := &Cluster{}
	scheme := "http"
	if o.tls {
		c.TLS = newTLSFiles(t, filepath.Join(dir, "pki"))
		scheme = "https"
	}
	token := fmt.Sprintf("podkit-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	var initial []string
	for i := range n {
		m := &Member{
			Name:      fmt.Sprintf("m%d", i),
			DataDir:   filepath.Join(dir, fmt.Sprintf("m%d", i)),
			ClientURL: fmt.Sprintf("%s://127.0.0.1:%d", scheme, freePort(t)),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
			log:       filepath.Join(dir, fmt.Sprintf("m%d.log", i)),
			bin:       bin,
		}
		initial = append(initial, m.Name+"="+m.PeerURL)
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		m.args = []string{
			"--name", m.Name,
			"--data-dir", m.DataDir,
			"--listen-client-urls", m.ClientURL,
			"--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", m.PeerURL,
			"--initial-advertise-peer-urls", m.PeerURL,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", token,
			"--heartbeat-interval", "50",
			"--election-timeout", "500",
			"--logger", "zap",
			"--log-level", "warn",
		}
		if c.TLS != nil {
			m.args = append(m.args,
				"--cert-file", c.TLS.ServerCert, "--key-file", c.TLS.ServerKey,
				"--trusted-ca-file", c.TLS.CA, "--client-cert-auth")
		}
		if err := m.start(); err != nil {
			t.Fatalf("etcdtest: %v", err)
		}
		t.Cleanup(func() { _ = m.Kill() })
	}
	for _, m := range c.Members {
		if err := c.WaitReady(context.Background(), m, 60*time.Second); err != nil {
			t.Fatalf("etcdtest: %v\n%s", err, m.Log())
		}
	}
	return c
}

// binary finds the etcd binary or skips (fails under
// PODKIT_PRIVILEGED=require).
func binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EtcdEnv); p != "" {
		return p
	}
	p, err := exec.LookPath("etcd")
	if err != nil {
		testutil.SkipOrFail(t, "etcd binary not found (install etcd-server with hack/install-deps.sh or set %s): %v", EtcdEnv, err)
	}
	return p
}

// freePort returns a port that was free a moment ago on 127.0.0.1.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Endpoints returns every member's client URL.
func (c *Cluster) Endpoints() []string {
	out := make([]string, 0, len(c.Members))
	for _, m := range c.Members {
		out = append(out, m.ClientURL)
	}
	return out
}

// ClientTLS returns the client TLS configuration, nil without TLS.
func (c *Cluster) ClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	if c.TLS == nil {
		return nil
	}
	cfg, err := c.TLS.ClientConfig()
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	return cfg
}

// Client returns a client of the whole cluster, closed in t.Cleanup.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := c.newClient(c.Endpoints())
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func (c *Cluster) newClient(endpoints []string) (*clientv3.Client, error) {
	cfg := clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if c.TLS != nil {
		tc, err := c.TLS.ClientConfig()
		if err != nil {
			return nil, err
		}
		cfg.TLS = tc
	}
	return clientv3.New(cfg)
}

// WaitReady waits until member m answers a linearizable read.
func (c *Cluster) WaitReady(ctx context.Context, m *Member, timeout time.Duration) error {
	cli, err := c.newClient([]string{m.ClientURL})
	if err != nil {
		return fmt.Errorf("client of %s: %w", m.Name, err)
	}
	defer cli.Close()
	deadline := time.Now().Add(timeout)
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := cli.Get(rctx, "/etcdtest-ready")
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("member %s not ready after %s: %w", m.Name, timeout, err)
		}
		if !m.Running() {
			return fmt.Errorf("member %s exited", m.Name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// start launches the member's process.
func (m *Member) start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return fmt.Errorf("member %s already running", m.Name)
	}
	logf, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("member %s log: %w", m.Name, err)
	}
	cmd := exec.Command(m.bin, m.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting etcd member %s: %w", m.Name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	m.cmd, m.exited = cmd, exited
	return nil
}

// Running reports whether the member's process is alive.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// Kill SIGKILLs the member and waits for it to exit. Idempotent.
func (m *Member) Kill() error { return m.signal(syscall.SIGKILL) }

// Stop SIGTERMs the member (a clean shutdown) and waits for it to exit.
func (m *Member) Stop() error { return m.signal(syscall.SIGTERM) }

func (m *Member) signal(sig syscall.Signal) error {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	return nil
}

// Restart starts a stopped member again on its data directory and ports
// and waits until it serves.
func (c *Cluster) Restart(t testing.TB, m *Member) {
	t.Helper()
	if err := m.start(); err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	if err := c.WaitReady(context.Background(), m, 60*time.Second); err != nil {
		t.Fatalf("etcdtest: %v\n%s", err, m.Log())
	}
}

// Log returns the member's output so far.
func (m *Member) Log() string {
	b, _ := os.ReadFile(m.log)
	return string(b)
}

// CPUTime returns the user+system CPU time the member's process has used
// (from /proc/<pid>/stat), for benchmarks that charge the server's CPU to
// the operations they measure.
func (m *Member) CPUTime() (time.Duration, error) {
	m.mu.Lock()
	cmd := m.cmd
	m.mu.Unlock()
	if cmd == nil {
		return 0, fmt.Errorf("member %s is not running", m.Name)
	}
	st, err := procstat.ReadStat(cmd.Process.Pid)
	if err != nil {
		return 0, fmt.Errorf("member %s: %w", m.Name, err)
	}
	return st.CPU, nil
}
