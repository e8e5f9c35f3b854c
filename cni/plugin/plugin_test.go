package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/cni/plugin"
	"github.com/podkit/podkit/internal/testutil"
)

// debianPluginDir is where Debian's containernetworking-plugins installs the
// reference plugins (hack/install-deps.sh installs the package).
const debianPluginDir = "/usr/lib/cni"

func requirePlugins(t testing.TB) {
	t.Helper()
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(debianPluginDir, p)); err != nil {
			testutil.SkipOrFail(t, "reference CNI plugin %s not installed in %s (apt-get install containernetworking-plugins)", p, debianPluginDir)
		}
	}
}

// bridgeConfList is the reference bridge + host-local configuration for env.
func bridgeConfList(env *cnitest.Env) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "podkit-test-%s",
  "plugins": [{
    "type": "bridge",
    "bridge": %q,
    "isDefaultGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "mtu": 1500,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": %q}]],
      "dataDir": %q
    }
  }]
}`, env.Suffix, env.BridgeName, env.PodCIDR, filepath.Join(env.StateDir, "host-local"))
}

// newPluginNetworker writes env's configuration and returns a Networker
// running the reference plugins inside env's node namespace.
func newPluginNetworker(t testing.TB, env *cnitest.Env) *plugin.Networker {
	t.Helper()
	requirePlugins(t)
	conf := filepath.Join(env.StateDir, "net.d")
	require.NoError(t, os.MkdirAll(conf, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(conf, "10-bridge.conflist"), []byte(bridgeConfList(env)), 0o644))
	n, err := plugin.New(plugin.Config{ConfDir: conf, BinDirs: []string{debianPluginDir}, CacheDir: filepath.Join(env.StateDir, "cache")},
		plugin.WithNodeNetNS(env.NodeNS.Path()), plugin.WithLoopback())
	require.NoError(t, err)
	return n
}

func TestReferencePluginsConformance(t *testing.T) {
	cnitest.Run(t, func(t *testing.T, env *cnitest.Env) cni.Networker {
		return newPluginNetworker(t, env)
	}, cnitest.Options{Concurrent: 20, Cycles: 20})
}

// fakeExec records invocations and answers like a trivial plugin.
type fakeExec struct {
	mu      sync.Mutex
	calls   []call
	addOut  string
	failCmd string
}

type call struct {
	plugin string
	env    map[string]string
	stdin  map[string]any
}

func (f *fakeExec) ExecPlugin(_ context.Context, path string, stdin []byte, environ []string) ([]byte, error) {
	c := call{plugin: filepath.Base(path), env: map[string]string{}}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "CNI_") {
			c.env[k] = v
		}
	}
	if err := json.Unmarshal(stdin, &c.stdin); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	if c.env["CNI_COMMAND"] == f.failCmd {
		return nil, &types.Error{Code: 100, Msg: "interface eth0 is missing"}
	}
	if c.env["CNI_COMMAND"] == "ADD" {
		return []byte(f.addOut), nil
	}
	return nil, nil
}

func (f *fakeExec) FindInPath(plugin string, paths []string) (string, error) {
	return filepath.Join(paths[0], plugin), nil
}

func (f *fakeExec) Decode(b []byte) (version.PluginInfo, error) {
	var d version.PluginDecoder
	return d.Decode(b)
}

var _ invoke.Exec = (*fakeExec)(nil)

const fakeResult = `{"cniVersion":"1.0.0",
 "interfaces":[{"name":"vethabc","mac":"0a:58:0a:f4:00:01"},{"name":"eth0","mac":"0a:58:0a:f4:00:02","sandbox":"/proc/self/ns/net"}],
 "ips":[{"address":"10.244.0.5/24","gateway":"10.244.0.1","interface":1}],
 "routes":[{"dst":"0.0.0.0/0","gw":"10.244.0.1"}],
 "dns":{"nameservers":["10.96.0.10"]}}`

func writeConf(t *testing.T, dir, name, body string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
}

func TestSetupPassesTheCNIEnvironmentAndParsesTheResult(t *testing.T) {
	dir := t.TempDir()
	writeConf(t, dir, "10-fake.conflist", `{"cniVersion":"1.0.0","name":"fake","plugins":[{"type":"fakeplug","x":1}]}`)
	fe := &fakeExec{addOut: fakeResult}
	n, err := plugin.New(plugin.Config{ConfDir: dir, BinDirs: []string{"/opt/fake"}, CacheDir: t.TempDir()}, plugin.WithExec(fe))
	require.NoError(t, err)
	assert.Equal(t, "fake", n.NetworkName())
	a := &cni.Attachment{ContainerID: "abc123", NetNS: "/proc/self/ns/net"}
	a.Pod.Namespace, a.Pod.Name = "team", "web-0"
	res, err := n.Setup(context.Background(), a)
	require.NoError(t, err)

	require.Len(t, fe.calls, 1)
	c := fe.calls[0]
	assert.Equal(t, "fakeplug", c.plugin)
	assert.Equal(t, "ADD", c.env["CNI_COMMAND"])
	assert.Equal(t, "abc123", c.env["CNI_CONTAINERID"])
	assert.Equal(t, "/proc/self/ns/net", c.env["CNI_NETNS"])
	assert.Equal(t, "eth0", c.env["CNI_IFNAME"])
	assert.Equal(t, "/opt/fake", c.env["CNI_PATH"])
	assert.Equal(t, "IgnoreUnknown=1;K8S_POD_NAMESPACE=team;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=abc123", c.env["CNI_ARGS"])
	assert.Equal(t, "fake", c.stdin["name"])
	assert.Equal(t, "1.0.0", c.stdin["cniVersion"])

	require.Len(t, res.Interfaces, 2)
	assert.Equal(t, "0a:58:0a:f4:00:02", res.Interfaces[1].MAC.String())
	assert.Equal(t, "10.244.0.5", res.PodIPs()[0].String())
	assert.Equal(t, "10.244.0.5/24", res.IPs[0].Address.String())
	assert.Equal(t, "10.244.0.1", res.IPs[0].Gateway.String())
	assert.Equal(t, "0.0.0.0/0", res.Routes[0].Dst.String())
	assert.Equal(t, []string{"10.96.0.10"}, res.DNS.Nameservers)

	// DEL gets the cached ADD result as prevResult.
	require.NoError(t, n.Teardown(context.Background(), a))
	require.Len(t, fe.calls, 2)
	assert.Equal(t, "DEL", fe.calls[1].env["CNI_COMMAND"])
	assert.NotNil(t, fe.calls[1].stdin["prevResult"])
}

func TestSetupRetryDeletesTheEarlierAttachmentFirst(t *testing.T) {
	dir := t.TempDir()
	writeConf(t, dir, "10-fake.conflist", `{"cniVersion":"1.0.0","name":"fake","plugins":[{"type":"fakeplug"}]}`)
	fe := &fakeExec{addOut: fakeResult}
	n, err := plugin.New(plugin.Config{ConfDir: dir, BinDirs: []string{"/opt/fake"}, CacheDir: t.TempDir()}, plugin.WithExec(fe))
	require.NoError(t, err)
	a := &cni.Attachment{ContainerID: "c1", NetNS: "/proc/self/ns/net"}
	_, err = n.Setup(context.Background(), a)
	require.NoError(t, err)
	_, err = n.Setup(context.Background(), a)
	require.NoError(t, err)
	var cmds []string
	for _, c := range fe.calls {
		cmds = append(cmds, c.env["CNI_COMMAND"])
	}
	assert.Equal(t, []string{"ADD", "DEL", "ADD"}, cmds)
}

func TestFailedAddIsRolledBack(t *testing.T) {
	dir := t.TempDir()
	writeConf(t, dir, "10-fake.conflist", `{"cniVersion":"1.0.0","name":"fake","plugins":[{"type":"fakeplug"}]}`)
	fe := &fakeExec{failCmd: "ADD"}
	n, err := plugin.New(plugin.Config{ConfDir: dir, BinDirs: []string{"/opt/fake"}, CacheDir: t.TempDir()}, plugin.WithExec(fe))
	require.NoError(t, err)
	_, err = n.Setup(context.Background(), &cni.Attachment{ContainerID: "c1", NetNS: "/proc/self/ns/net"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "interface eth0 is missing")
	require.Len(t, fe.calls, 2)
	assert.Equal(t, "DEL", fe.calls[1].env["CNI_COMMAND"])
}

func TestCheckFailureWrapsErrNotAttached(t *testing.T) {
	dir := t.TempDir()
	writeConf(t, dir, "10-fake.conflist", `{"cniVersion":"1.0.0","name":"fake","plugins":[{"type":"fakeplug"}]}`)
	fe := &fakeExec{addOut: fakeResult, failCmd: "CHECK"}
	n, err := plugin.New(plugin.Config{ConfDir: dir, BinDirs: []string{"/opt/fake"}, CacheDir: t.TempDir()}, plugin.WithExec(fe))
	require.NoError(t, err)
	a := &cni.Attachment{ContainerID: "c1", NetNS: "/proc/self/ns/net"}
	err = n.Check(context.Background(), a)
	assert.ErrorIs(t, err, cni.ErrNotAttached, "nothing cached yet")
	_, err = n.Setup(context.Background(), a)
	require.NoError(t, err)
	err = n.Check(context.Background(), a)
	assert.ErrorIs(t, err, cni.ErrNotAttached)
	assert.Contains(t, err.Error(), "interface eth0 is missing")
}

func TestTeardownWithVanishedNamespacePassesEmptyNetNS(t *testing.T) {
	dir := t.TempDir()
	writeConf(t, dir, "10-fake.conflist", `{"cniVersion":"1.0.0","name":"fake","plugins":[{"type":"fakeplug"}]}`)
	fe := &fakeExec{}
	n, err := plugin.New(plugin.Config{ConfDir: dir, BinDirs: []string{"/opt/fake"}, CacheDir: t.TempDir()}, plugin.WithExec(fe))
	require.NoError(t, err)
	require.NoError(t, n.Teardown(context.Background(), &cni.Attachment{ContainerID: "c1", NetNS: filepath.Join(dir, "gone")}))
	require.Len(t, fe.calls, 1)
	assert.Equal(t, "", fe.calls[0].env["CNI_NETNS"])
}

func TestConfigSelection(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		network string
		want    string
		wantErr error
	}{
		{
			name: "first in lexical order",
			files: map[string]string{
				"20-b.conflist": `{"cniVersion":"1.0.0","name":"b","plugins":[{"type":"x"}]}`,
				"10-a.conflist": `{"cniVersion":"1.0.0","name":"a","plugins":[{"type":"x"}]}`,
			},
			want: "a",
		},
		{
			name: "by name",
			files: map[string]string{
				"10-a.conflist": `{"cniVersion":"1.0.0","name":"a","plugins":[{"type":"x"}]}`,
				"20-b.conflist": `{"cniVersion":"1.0.0","name":"b","plugins":[{"type":"x"}]}`,
			},
			network: "b",
			want:    "b",
		},
		{
			name:  "single plugin .conf becomes a list",
			files: map[string]string{"05-single.conf": `{"cniVersion":"0.4.0","name":"single","type":"bridge"}`},
			want:  "single",
		},
		{
			name: "broken file is skipped",
			files: map[string]string{
				"00-broken.conflist": `{not json`,
				"10-ok.conflist":     `{"cniVersion":"1.0.0","name":"ok","plugins":[{"type":"x"}]}`,
			},
			want: "ok",
		},
		{name: "empty dir", files: map[string]string{}, wantErr: plugin.ErrNoNetwork},
		{
			name:    "name not found",
			files:   map[string]string{"10-a.conflist": `{"cniVersion":"1.0.0","name":"a","plugins":[{"type":"x"}]}`},
			network: "zzz",
			wantErr: plugin.ErrNoNetwork,
		},
		{name: "other extensions ignored", files: map[string]string{"10-a.txt": `{}`}, wantErr: plugin.ErrNoNetwork},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tc.files {
				writeConf(t, dir, name, body)
			}
			opts := []plugin.Option{plugin.WithExec(&fakeExec{})}
			if tc.network != "" {
				opts = append(opts, plugin.WithNetworkName(tc.network))
			}
			n, err := plugin.New(plugin.Config{ConfDir: dir, CacheDir: t.TempDir()}, opts...)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, n.NetworkName())
		})
	}
}

func TestReloadPicksUpNewConfiguration(t *testing.T) {
	dir := t.TempDir()
	writeConf(t, dir, "20-b.conflist", `{"cniVersion":"1.0.0","name":"b","plugins":[{"type":"x"}]}`)
	n, err := plugin.New(plugin.Config{ConfDir: dir, CacheDir: t.TempDir()}, plugin.WithExec(&fakeExec{}))
	require.NoError(t, err)
	writeConf(t, dir, "10-a.conflist", `{"cniVersion":"1.0.0","name":"a","plugins":[{"type":"x"}]}`)
	require.NoError(t, n.Reload())
	assert.Equal(t, "a", n.NetworkName())
}

func TestOptionsRejectBadValues(t *testing.T) {
	for name, opt := range map[string]plugin.Option{
		"empty network": plugin.WithNetworkName(""),
		"not a netns":   plugin.WithNodeNetNS(t.TempDir()),
		"nil exec":      plugin.WithExec(nil),
		"nil stderr":    plugin.WithPluginStderr(nil),
		"nil logger":    plugin.WithLogger(nil),
	} {
		_, err := plugin.New(plugin.Config{ConfDir: t.TempDir()}, opt)
		assert.Error(t, err, name)
	}
}
