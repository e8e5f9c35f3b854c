package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Shape of the crash test.
const (
	crashRounds      = 3
	crashWriters     = 8
	crashMinAcks     = 100                     // acknowledged creates before the kill
	crashMinWrite    = 1 * time.Second         // writing time before the kill
	crashWriteBudget = 30 * time.Second        // give up waiting for crashMinAcks
	crashNamespace   = metav1.NamespaceDefault // where the configmaps go
)

// ack is one create the server acknowledged with 201 Created.
type ack struct {
	name, value string
	rv          uint64
}

// TestCrashDurability: writers create configmaps as fast as they can; the
// server is killed with SIGKILL mid-stream and restarted on the same bolt
// data directory. Every create it acknowledged must have survived, with the
// resourceVersion it was acknowledged with, and resourceVersions must keep
// growing past every acknowledged one. Three crashes in a row, each round
// checking everything acknowledged since the start.
func TestCrashDurability(t *testing.T) {
	t.Parallel()
	srv := startAPIServer(t)
	acked := map[string]ack{}
	var maxRV uint64
	for round := range crashRounds {
		acks, errsBeforeKill := writeUntilKilled(t, srv, round)
		require.Empty(t, errsBeforeKill, "round %d: creates failed while the server was up", round)
		require.GreaterOrEqual(t, len(acks), crashMinAcks, "round %d", round)
		for _, a := range acks {
			acked[a.name] = a
			maxRV = max(maxRV, a.rv)
		}
		t.Logf("round %d: %d creates acknowledged before SIGKILL (%d in total), max resourceVersion %d", round, len(acks), len(acked), maxRV)

		srv.Restart(0)
		probe := verifyDurable(t, srv.Client(), acked, maxRV)
		acked[probe.name], maxRV = probe, probe.rv
	}
}

// writeUntilKilled runs crashWriters concurrent creators until at least
// crashMinAcks creates were acknowledged and crashMinWrite passed, then
// kills the server. It returns the acknowledged creates and the errors seen
// before the kill.
func writeUntilKilled(t *testing.T, srv *apiServer, round int) ([]ack, []error) {
	t.Helper()
	cfg := srv.RESTConfig()
	cfg.Timeout = apiTimeout
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)

	var (
		mu         sync.Mutex
		acks       []ack
		errs       []error
		killed     atomic.Bool
		wg         sync.WaitGroup
		ctx, stop  = context.WithCancel(t.Context())
		enoughAcks = make(chan struct{})
		closeOnce  sync.Once
	)
	defer stop()
	for w := range crashWriters {
		wg.Go(func() {
			for seq := 0; ctx.Err() == nil; seq++ {
				name := fmt.Sprintf("r%d-w%d-%d", round, w, seq)
				value := fmt.Sprintf("round %d writer %d seq %d", round, w, seq)
				a, err := createConfigMap(ctx, client, name, value)
				if killed.Load() {
					if err == nil { // answered before the kill landed
						mu.Lock()
						acks = append(acks, a)
						mu.Unlock()
					}
					return
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					acks = append(acks, a)
					if len(acks) >= crashMinAcks {
						closeOnce.Do(func() { close(enoughAcks) })
					}
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}

	started := time.Now()
	select {
	case <-enoughAcks:
	case <-time.After(crashWriteBudget):
	}
	if d := crashMinWrite - time.Since(started); d > 0 {
		time.Sleep(d)
	}
	killed.Store(true)
	srv.Kill()
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return acks, errs
}

// createConfigMap creates a configmap and returns it as acknowledged, or
// an error unless the server answered 201 Created.
func createConfigMap(ctx context.Context, client kubernetes.Interface, name, value string) (ack, error) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"podkit.dev/test": "crash"}},
		Data:       map[string]string{"value": value},
	}
	var code int
	res := client.CoreV1().RESTClient().Post().
		Namespace(crashNamespace).Resource("configmaps").Body(cm).Do(ctx).StatusCode(&code)
	out := &corev1.ConfigMap{}
	if err := res.Into(out); err != nil {
		return ack{}, fmt.Errorf("creating configmap %s: %w", name, err)
	}
	if code != http.StatusCreated {
		return ack{}, fmt.Errorf("creating configmap %s: status %d, want 201", name, code)
	}
	var rv uint64
	if _, err := fmt.Sscan(out.ResourceVersion, &rv); err != nil {
		return ack{}, fmt.Errorf("configmap %s: resourceVersion %q: %w", name, out.ResourceVersion, err)
	}
	return ack{name: name, value: value, rv: rv}, nil
}

// verifyDurable requires every acknowledged configmap, unchanged, and
// resourceVersions at or past maxRV; it returns a probe configmap created
// after the checks.
func verifyDurable(t *testing.T, client kubernetes.Interface, acked map[string]ack, maxRV uint64) ack {
	t.Helper()
	list, err := client.CoreV1().ConfigMaps(crashNamespace).List(testContext(t, apiTimeout), metav1.ListOptions{LabelSelector: "podkit.dev/test=crash"})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, parseRV(t, list.ResourceVersion), maxRV, "list resourceVersion after restart")
	stored := make(map[string]corev1.ConfigMap, len(list.Items))
	for _, cm := range list.Items {
		stored[cm.Name] = cm
	}
	var lost, changed []string
	for name, a := range acked {
		cm, ok := stored[name]
		switch {
		case !ok:
			lost = append(lost, name)
		case cm.Data["value"] != a.value || parseRV(t, cm.ResourceVersion) != a.rv:
			changed = append(changed, fmt.Sprintf("%s: value %q rv %s, acknowledged %q rv %d", name, cm.Data["value"], cm.ResourceVersion, a.value, a.rv))
		}
	}
	if len(lost)+len(changed) > 0 {
		slices.Sort(lost)
		slices.Sort(changed)
		t.Fatalf("%d of %d acknowledged configmaps lost in the crash (first: %v); %d changed (first: %v)",
			len(lost), len(acked), lost[:min(len(lost), 10)], len(changed), changed[:min(len(changed), 10)])
	}

	a, err := createConfigMap(testContext(t, apiTimeout), client, fmt.Sprintf("probe-%d", maxRV), "probe")
	require.NoError(t, err)
	assert.Greater(t, a.rv, maxRV, "a write after the restart must get a resourceVersion past every acknowledged one")
	return a
}
