package apiserver_test

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/storage/bolt"
)

// TestServiceAllocationsSurviveRestart: a server reopening a bolt store
// rebuilds its allocations from the stored Services, so it never hands out
// an address or node port twice. The /28 holds 14 addresses: half are
// taken before the restart, the other half after, then the range is full —
// a server that forgot the first half would collide or find room.
func TestServiceAllocationsSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	ranges := func(c *apiserver.Config) {
		c.ServiceClusterIPRange = netip.MustParsePrefix("10.0.0.0/28")
		c.ServiceNodePortRange.Base, c.ServiceNodePortRange.Size = 30000, 16
		c.Validator = nil
	}
	open := func() (*svcServer, func()) {
		st, err := bolt.Open(path, scheme.StorageCodec(scheme.New()), bolt.WithLockTimeout(5*time.Second))
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		s := newSvcServer(t, st, ranges)
		return s, func() { s.close(); require.NoError(t, st.Close()) }
	}

	first, stop := open()
	ips := map[string]bool{}
	ports := map[int32]bool{}
	for i := 0; i < 7; i++ {
		svc := first.mustCreate(t, service(fmt.Sprintf("before-%d", i), corev1.ServiceTypeNodePort, ""))
		ips[svc.Spec.ClusterIP] = true
		ports[svc.Spec.Ports[0].NodePort] = true
	}
	stop()

	second, _ := open()
	assert.Equal(t, 7, second.srv.ServiceAllocator().IPs().Used(), "Bootstrap loaded the stored allocations")
	var port int32
	for p := range ports {
		port = p
	}
	_, err := second.create(t, service("same-port", corev1.ServiceTypeNodePort, "", port))
	assert.ErrorContains(t, err, "provided port is already allocated")
	for i := 0; i < 7; i++ {
		svc := second.mustCreate(t, service(fmt.Sprintf("after-%d", i), corev1.ServiceTypeNodePort, ""))
		require.False(t, ips[svc.Spec.ClusterIP], "%s handed out again after the restart", svc.Spec.ClusterIP)
		require.False(t, ports[svc.Spec.Ports[0].NodePort], "node port %d handed out again", svc.Spec.Ports[0].NodePort)
		ips[svc.Spec.ClusterIP] = true
		ports[svc.Spec.Ports[0].NodePort] = true
	}
	_, err = second.create(t, service("one-too-many", corev1.ServiceTypeClusterIP, ""))
	require.Error(t, err)
	assert.True(t, apierrors.IsInternalError(err))
	assert.Contains(t, err.Error(), "failed to allocate a serviceIP: range is full")
}
