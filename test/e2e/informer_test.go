package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// convergeTimeout bounds how long an informer may take to catch up; the
// reflector's backoff after losing the server is at most a few seconds.
const convergeTimeout = 60 * time.Second

// TestInformerSurvivesRestart: a client-go shared informer on pods keeps
// working across a graceful restart of the API server (bolt store, same
// data directory, same port): its lister converges to exactly the pods
// that exist, including changes made after the restart, with the server's
// resourceVersions.
func TestInformerSurvivesRestart(t *testing.T) {
	t.Parallel()
	srv := startAPIServer(t)
	client := srv.Client() // the URL survives the restart: same port
	port := srv.Port

	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("default"))
	pods := factory.Core().V1().Pods()
	informer, lister := pods.Informer(), pods.Lister()
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	syncCtx := testContext(t, convergeTimeout)
	require.True(t, cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced), "informer cache sync")

	for i := range 4 {
		createPod(t, client, fmt.Sprintf("p%d", i))
	}
	requireListerConverges(t, lister.List, client, "p0", "p1", "p2", "p3")

	srv.Stop()
	srv.Restart(port)
	require.Equal(t, port, srv.Port)

	for i := 4; i < 7; i++ {
		createPod(t, client, fmt.Sprintf("p%d", i))
	}
	require.NoError(t, client.CoreV1().Pods("default").Delete(testContext(t, apiTimeout), "p1", metav1.DeleteOptions{}))
	labelled := getPod(t, client, "p2")
	labelled.Labels["after"] = "restart"
	_, err := client.CoreV1().Pods("default").Update(testContext(t, apiTimeout), labelled, metav1.UpdateOptions{})
	require.NoError(t, err)

	requireListerConverges(t, lister.List, client, "p0", "p2", "p3", "p4", "p5", "p6")
	cached, err := lister.Pods("default").Get("p2")
	require.NoError(t, err)
	require.Equal(t, "restart", cached.Labels["after"])
}

// requireListerConverges waits until the server holds exactly the pods
// names and the lister holds the same pods at the same resourceVersions.
func requireListerConverges(t *testing.T, list func(labels.Selector) ([]*corev1.Pod, error), client kubernetes.Interface, names ...string) {
	t.Helper()
	eventually(t, convergeTimeout, func() (bool, string) {
		want, err := client.CoreV1().Pods("default").List(testContext(t, apiTimeout), metav1.ListOptions{})
		if err != nil {
			return false, fmt.Sprintf("listing pods: %v", err)
		}
		cached, err := list(labels.Everything())
		if err != nil {
			return false, fmt.Sprintf("lister: %v", err)
		}
		var w, g, n []string
		for _, p := range want.Items {
			w = append(w, p.Name+"@"+p.ResourceVersion)
			n = append(n, p.Name)
		}
		slices.Sort(n)
		if !slices.Equal(n, names) {
			return false, fmt.Sprintf("server has pods %v, want %v", n, names)
		}
		for _, p := range cached {
			g = append(g, p.Name+"@"+p.ResourceVersion)
		}
		slices.Sort(w)
		slices.Sort(g)
		return slices.Equal(w, g), fmt.Sprintf("server has %v, informer has %v", w, g)
	})
}
