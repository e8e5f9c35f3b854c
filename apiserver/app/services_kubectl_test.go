package app_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/internal/testutil"
)

// kubectlEnv runs a real kubectl against an API server built by app.New,
// as `podkit apiserver` builds it.
type kubectlEnv struct {
	t          *testing.T
	bin        string
	kubeconfig string
	port       int
}

func startAPIServer(t *testing.T, mutate func(*app.Options)) *kubectlEnv {
	t.Helper()
	bin := testutil.Kubectl(t, 32)
	opts := app.DefaultOptions()
	opts.Store, opts.Port, opts.Logger = app.StoreMemory, 0, slog.New(slog.DiscardHandler)
	opts.DataDir = t.TempDir() // the cluster PKI
	opts.KubeconfigPath = filepath.Join(t.TempDir(), "kubeconfig")
	if mutate != nil {
		mutate(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := app.New(ctx, opts)
	if err != nil {
		cancel()
		require.NoError(t, err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	return &kubectlEnv{t: t, bin: bin, kubeconfig: opts.KubeconfigPath, port: srv.Listener.Addr().(*net.TCPAddr).Port}
}

func (k *kubectlEnv) run(args ...string) (stdout, stderr string, code int) {
	k.t.Helper()
	cmd := exec.CommandContext(k.t.Context(), k.bin, append([]string{"--kubeconfig=" + k.kubeconfig}, args...)...)
	home := k.t.TempDir()
	cmd.Env = []string{"HOME=" + home, "NO_PROXY=127.0.0.1", "PATH=" + os.Getenv("PATH")}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

func (k *kubectlEnv) ok(args ...string) string {
	k.t.Helper()
	out, errOut, code := k.run(args...)
	require.Equal(k.t, 0, code, "kubectl %s: %s", strings.Join(args, " "), errOut)
	return out
}

func (k *kubectlEnv) fails(args ...string) string {
	k.t.Helper()
	_, errOut, code := k.run(args...)
	require.NotEqual(k.t, 0, code, "kubectl %s succeeded", strings.Join(args, " "))
	return errOut
}

// row returns the fields of the table row whose first cell is name.
func row(t *testing.T, table, name string) []string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return f
		}
	}
	t.Fatalf("no row %q in:\n%s", name, table)
	return nil
}

func TestKubectlServices(t *testing.T) {
	k := startAPIServer(t, nil)

	out := k.ok("get", "svc", "kubernetes")
	assert.Equal(t, []string{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"}, strings.Fields(strings.SplitN(out, "\n", 2)[0]))
	assert.Equal(t, []string{"kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"}, row(t, out, "kubernetes")[:5])
	out = k.ok("get", "endpoints", "kubernetes")
	assert.Equal(t, fmt.Sprintf("127.0.0.1:%d", k.port), row(t, out, "kubernetes")[1])
	assert.Equal(t, fmt.Sprint(k.port), k.ok("get", "svc", "kubernetes", "-o", "jsonpath={.spec.ports[0].targetPort}"))

	assert.Equal(t, "service/web created\n", k.ok("create", "service", "clusterip", "web", "--tcp=80:8080"))
	web := row(t, k.ok("get", "svc"), "web")
	ip, err := netip.ParseAddr(web[2])
	require.NoError(t, err, "CLUSTER-IP column %q", web[2])
	assert.True(t, netip.MustParsePrefix("10.96.0.0/12").Contains(ip))
	assert.Equal(t, []string{"web", "ClusterIP", web[2], "<none>", "80/TCP"}, web[:5])

	assert.Equal(t, `error: failed to create ClusterIP service: Service "bad" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.1"]: failed to allocate IP 10.0.0.1: the provided IP (10.0.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12`+"\n",
		k.fails("create", "service", "clusterip", "bad", "--tcp=80", "--clusterip=10.0.0.1"))
	assert.Equal(t, `error: failed to create ClusterIP service: Service "dup" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.1"]: failed to allocate IP 10.96.0.1: provided IP is already allocated`+"\n",
		k.fails("create", "service", "clusterip", "dup", "--tcp=80", "--clusterip=10.96.0.1"))

	k.ok("create", "service", "clusterip", "db", "--clusterip=None")
	assert.Equal(t, "None", row(t, k.ok("get", "svc", "db"), "db")[2])

	k.ok("create", "service", "nodeport", "np", "--tcp=80", "--node-port=30080")
	assert.Equal(t, "80:30080/TCP", row(t, k.ok("get", "svc", "np"), "np")[4])
	assert.Equal(t, `error: failed to create NodePort service: Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated`+"\n",
		k.fails("create", "service", "nodeport", "np2", "--tcp=80", "--node-port=30080"))

	// kubectl apply twice: the allocated IP survives the resent manifest.
	manifest := filepath.Join(t.TempDir(), "svc.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: api\nspec:\n  selector:\n    app: api\n  ports:\n  - port: 80\n"), 0o600))
	assert.Equal(t, "service/api created\n", k.ok("apply", "-f", manifest))
	first := k.ok("get", "svc", "api", "-o", "jsonpath={.spec.clusterIP}")
	assert.Equal(t, "service/api unchanged\n", k.ok("apply", "-f", manifest))
	assert.Equal(t, first, k.ok("get", "svc", "api", "-o", "jsonpath={.spec.clusterIP}"))

	// The kubernetes service comes back after a delete.
	k.ok("delete", "svc", "kubernetes")
	k.ok("wait", "--for=jsonpath={.spec.clusterIP}=10.96.0.1", "svc/kubernetes", "--timeout=60s")
}

// TestAPIServerServiceFlags: the Options behind --service-cluster-ip-range,
// --service-node-port-range and --advertise-address.
func TestAPIServerServiceFlags(t *testing.T) {
	k := startAPIServer(t, func(o *app.Options) {
		o.ServiceClusterIPRange = "10.123.0.0/24"
		require.NoError(t, o.ServiceNodePortRange.Set("31000-31099"))
		o.AdvertiseAddress = "192.0.2.7"
	})
	assert.Equal(t, "10.123.0.1", row(t, k.ok("get", "svc", "kubernetes"), "kubernetes")[2])
	assert.Equal(t, fmt.Sprintf("192.0.2.7:%d", k.port), row(t, k.ok("get", "endpoints", "kubernetes"), "kubernetes")[1])
	assert.Contains(t, k.fails("create", "service", "nodeport", "np", "--tcp=80", "--node-port=30080"),
		"provided port is not in the valid range. The range of valid ports is 31000-31099")
	k.ok("create", "service", "nodeport", "np", "--tcp=80")
	np, err := strconv.Atoi(k.ok("get", "svc", "np", "-o", "jsonpath={.spec.ports[0].nodePort}"))
	require.NoError(t, err)
	assert.True(t, np >= 31000 && np <= 31099, "node port %d", np)
}

func TestAPIServerServiceFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*app.Options)
		want   string
	}{
		{"cidr", func(o *app.Options) { o.ServiceClusterIPRange = "10.96.0.0" }, "--service-cluster-ip-range"},
		{"too large", func(o *app.Options) { o.ServiceClusterIPRange = "10.0.0.0/8" }, "is too large"},
		{"advertise", func(o *app.Options) { o.AdvertiseAddress = "nope" }, "--advertise-address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := app.DefaultOptions()
			opts.Store, opts.Port, opts.Logger = app.StoreMemory, 0, slog.New(slog.DiscardHandler)
			opts.DataDir = t.TempDir()
			tc.mutate(&opts)
			_, err := app.New(context.Background(), opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
