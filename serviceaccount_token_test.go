package podkit

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/sandbox"
)

const tokenboxImage = "test/tokenbox:1"

var buildTokenbox = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "podkit-tokenbox-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "tokenbox")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./testdata/tokenbox")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building tokenbox: %w\n%s", err, out)
	}
	return bin, nil
})

// TestProjectedServiceAccountToken runs real pods on a secure one-node
// cluster (HTTPS, authentication on, as podkit up): the ServiceAccount
// admission plugin gives each a kube-api-access volume, the kubelet fills
// it through the TokenRequest API, and the pod reads token, ca.crt and
// namespace at /var/run/secrets/kubernetes.io/serviceaccount and calls the
// API server with them as its service account. A second pod's token stops
// working once that pod is deleted, while the first pod's still works.
func TestProjectedServiceAccountToken(t *testing.T) {
	testutil.RequireRoot(t)
	bin, err := buildTokenbox()
	require.NoError(t, err)
	b := cnitest.RandomByte()
	logDir := t.TempDir()
	cfg := ClusterConfig{
		DataDir: t.TempDir(), Nodes: 1, NodePrefix: "sat-" + cnitest.RandomHex(3), Port: -1, Store: app.StoreMemory,
		ClusterCIDR: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 224 + b%12, 0, 0}), 16),
		ServiceCIDR: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 164 + b%12, 0, 0}), 16),
		DemoImages:  map[string]string{tokenboxImage: bin}, ShutdownGrace: 2 * time.Second,
		Logger: slog.New(slog.DiscardHandler),
		Node:   func(_ int, nc *NodeConfig) { nc.LogDir = logDir },
	}
	ctx := context.Background()
	c, err := NewCluster(ctx, cfg)
	require.NoError(t, err)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
		sctx, scancel := context.WithTimeout(ctx, 2*time.Minute)
		defer scancel()
		assert.NoError(t, c.Shutdown(sctx))
		assert.Empty(t, mountPoints(t, cfg.DataDir), "no token volume left mounted under the data dir")
	})
	client := c.Client()
	require.NoError(t, WaitNodesReady(ctx, client, 1, 2*time.Minute))
	require.True(t, strings.HasPrefix(c.URL(), "https://"), "podkit's cluster is secure by default: %s", c.URL())

	for _, name := range []string{"first", "second"} {
		_, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				// The host's network: the API server listens on 127.0.0.1.
				HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []corev1.Container{{Name: "app", Image: c.Image(tokenboxImage)}},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	pods := map[string]*corev1.Pod{}
	require.Eventually(t, func() bool {
		for _, name := range []string{"first", "second"} {
			p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].ContainerID == "" {
				return false
			}
			pods[name] = p
		}
		return true
	}, 2*time.Minute, 200*time.Millisecond, "pods running")
	var vol *corev1.Volume
	for i, v := range pods["first"].Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			vol = &pods["first"].Spec.Volumes[i]
		}
	}
	require.NotNil(t, vol, "the ServiceAccount plugin added the token volume: %v", pods["first"].Spec.Volumes)

	exec := func(pod string, args ...string) (string, error) {
		id := pods[pod].Status.ContainerStatuses[0].ContainerID
		id = id[strings.Index(id, "://")+3:]
		res, err := c.Nodes()[0].runtime.(sandbox.Execer).ExecSync(ctx, id, append([]string{"/tokenbox"}, args...), time.Minute)
		if err != nil {
			return "", err
		}
		if res.ExitCode != 0 {
			return string(res.Stdout), fmt.Errorf("tokenbox %v: exit %d: %s", args, res.ExitCode, res.Stderr)
		}
		return string(res.Stdout), nil
	}
	out, err := exec("first", "whoami", c.URL())
	require.NoError(t, err)
	assert.Equal(t, "user system:serviceaccount:default:default\nnamespace default\n", out)

	token, err := exec("second", "token")
	require.NoError(t, err)
	caPEM, err := client.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	require.NoError(t, err)
	asSecond, err := kubernetes.NewForConfig(&rest.Config{Host: c.URL(), BearerToken: strings.TrimSpace(token),
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte(caPEM.Data["ca.crt"])}})
	require.NoError(t, err)
	who, err := asSecond.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "system:serviceaccount:default:default", who.Status.UserInfo.Username)
	assert.Equal(t, []string{"second"}, []string(who.Status.UserInfo.Extra["authentication.kubernetes.io/pod-name"]))

	require.NoError(t, client.CoreV1().Pods("default").Delete(ctx, "second", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := client.CoreV1().Pods("default").Get(ctx, "second", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 2*time.Minute, 200*time.Millisecond, "second pod gone")
	_, err = asSecond.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsUnauthorized(err), "the deleted pod's token no longer authenticates: %v", err)
	out, err = exec("first", "whoami", c.URL())
	require.NoError(t, err, "the first pod's token still works")
	assert.Contains(t, out, "user system:serviceaccount:default:default")
}
