package kubelet_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/kubelet"
	"github.com/podkit/podkit/sandbox"
)

// tree lists the files under root, one "path mode" line each, with the
// pod's UID written <uid> and a termination log's random name <log>.
func tree(t *testing.T, root string, uid string) []string {
	t.Helper()
	hex := regexp.MustCompile(`/[0-9a-f]{8}$`)
	var out []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		fi, err := d.Info()
		require.NoError(t, err)
		rel, err := filepath.Rel(root, p)
		require.NoError(t, err)
		rel = hex.ReplaceAllString(strings.ReplaceAll(rel, uid, "<uid>"), "/<log>")
		out = append(out, rel+" "+fi.Mode().String())
		return nil
	}))
	return out
}

// umasked is perm as the process's umask lets files be created.
func umasked(perm os.FileMode) os.FileMode {
	mask := syscall.Umask(0)
	syscall.Umask(mask)
	return perm &^ os.FileMode(mask)
}

// The kubelet's files of a running pod: its state directory (volumes,
// plugins, the termination log, etc-hosts) and its log directory, with
// their modes, as the kubelet's makePodDataDirs and the runtime's log
// directories make them; etc-hosts is rewritten when it goes missing or
// stale, at the next sync.
func TestPodFilesOnDisk(t *testing.T) {
	e := newEnv(t, func(c *kubelet.Config) { c.Volumes = noVolumes{} })
	e.start()
	p := e.create(e.pod("web", []string{"sleep", "inf"}))
	e.waitPod("web", "Running", running)
	uid := string(p.UID)

	dir := func(perm os.FileMode) string { return (fs.ModeDir | umasked(perm)).String() }
	file := umasked(0o644).String()
	assert.Equal(t, []string{
		". " + dir(0o750),
		"<uid> " + dir(0o750),
		"<uid>/containers " + dir(0o750),
		"<uid>/containers/app " + dir(0o750),
		"<uid>/containers/app/<log> " + os.FileMode(0o666).String(),
		"<uid>/etc-hosts " + file,
		"<uid>/plugins " + dir(0o750),
		"<uid>/volumes " + dir(0o750),
	}, tree(t, filepath.Join(e.cfg.RootDir, "pods"), uid))
	assert.Equal(t, []string{
		". " + dir(0o750),
		"default_web_<uid> " + dir(0o750),
		"default_web_<uid>/app " + dir(0o755),
		"default_web_<uid>/app/0.log " + umasked(0o640).String(),
	}, tree(t, e.cfg.LogDir, uid))
	hostsPath := filepath.Join(e.cfg.RootDir, "pods", uid, "etc-hosts")
	hosts, err := os.ReadFile(hostsPath)
	require.NoError(t, err)
	assert.Contains(t, string(hosts), "\tweb\n")

	// A later sync puts back what went missing or stale.
	require.NoError(t, os.Remove(hostsPath))
	e.step(kubelet.DefaultResyncInterval)
	waitFile(t, hostsPath, string(hosts))
	require.NoError(t, os.WriteFile(hostsPath, []byte("stale\n"), 0o644))
	e.step(kubelet.DefaultResyncInterval)
	waitFile(t, hostsPath, string(hosts))
	plugins := filepath.Join(e.cfg.RootDir, "pods", uid, "plugins")
	require.NoError(t, os.Remove(plugins))
	e.step(kubelet.DefaultResyncInterval)
	waitFor(t, func() bool {
		fi, err := os.Stat(plugins)
		return err == nil && fi.IsDir()
	})
}

// waitFile waits until the file at p holds want.
func waitFile(t *testing.T, p, want string) {
	t.Helper()
	waitFor(t, func() bool {
		b, err := os.ReadFile(p)
		return err == nil && string(b) == want
	})
}

// waitFor waits until cond holds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "the condition never held")
		time.Sleep(10 * time.Millisecond)
	}
}

// noVolumes sets up no volume, so a pod's directories hold only what the
// kubelet itself puts there.
type noVolumes struct{}

func (noVolumes) Setup(context.Context, *corev1.Pod) (map[string]string, error) { return nil, nil }

func (noVolumes) Mounts(*corev1.Pod, *corev1.Container, map[string]string) ([]sandbox.Mount, error) {
	return nil, nil
}

func (noVolumes) Teardown(context.Context, types.UID) error { return nil }
