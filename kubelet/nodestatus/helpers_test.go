package nodestatus

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// t0 is the fake clock's start, whole seconds as the API stores times.
var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	gi = int64(1) << 30
	mi = int64(1) << 20
)

// fakeMachine is a Machine whose answers the test sets.
type fakeMachine struct {
	mu       sync.Mutex
	capacity corev1.ResourceList
	info     SystemInfo
	signals  Signals
	capErr   error
	sigErr   error
}

// newFakeMachine is a healthy 4-core, 8Gi, 100Gi machine.
func newFakeMachine() *fakeMachine {
	return &fakeMachine{
		capacity: corev1.ResourceList{
			corev1.ResourceCPU:              *resource.NewQuantity(4, resource.DecimalSI),
			corev1.ResourceMemory:           *resource.NewQuantity(8*gi, resource.BinarySI),
			corev1.ResourceEphemeralStorage: *resource.NewQuantity(100*gi, resource.BinarySI),
		},
		info: SystemInfo{MachineID: "m-1", SystemUUID: "u-1", BootID: "b-1", KernelVersion: "6.1.0-test", OSImage: "Debian GNU/Linux 12 (bookworm)"},
		signals: Signals{MemoryAvailable: 4 * gi, MemoryCapacity: 8 * gi, NodeFSAvailable: 50 * gi, NodeFSCapacity: 100 * gi,
			NodeFSInodesFree: 1_000_000, NodeFSInodes: 2_000_000, PIDsAvailable: 30000, PIDsMax: 32768},
	}
}

func (m *fakeMachine) Capacity(context.Context) (corev1.ResourceList, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.capacity.DeepCopy(), m.capErr
}

func (m *fakeMachine) SystemInfo(context.Context) (SystemInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.info, nil
}

func (m *fakeMachine) Signals(context.Context) (Signals, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.signals, m.sigErr
}

// set changes the machine under its lock.
func (m *fakeMachine) set(f func(m *fakeMachine)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m)
}

// newFakeClient is a fake clientset that gives created objects a UID, as
// an API server does.
func newFakeClient(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	c.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if obj, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && obj.GetUID() == "" {
			obj.SetUID(types.UID("uid-" + obj.GetName()))
		}
		return false, nil, nil
	})
	return c
}

// testConfig is a controller configuration over client and machine with
// a fake clock.
func testConfig(client *fake.Clientset, m Machine, clk *clocktesting.FakeClock) Config {
	return Config{
		Client:    client,
		NodeName:  "node-1",
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}},
		Machine:   m,
		Clock:     clk,
		Logger:    slog.New(slog.DiscardHandler),
	}
}

// newController builds a controller, applying mutate to its config.
func newController(t *testing.T, client *fake.Clientset, m Machine, clk *clocktesting.FakeClock, mutate ...func(*Config)) *Controller {
	t.Helper()
	cfg := testConfig(client, m, clk)
	for _, f := range mutate {
		f(&cfg)
	}
	c, err := New(cfg)
	require.NoError(t, err)
	return c
}

// countActions counts the client's actions of verb on resource (and
// subresource, when given).
func countActions(c *fake.Clientset, verb, resource, sub string) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == sub {
			n++
		}
	}
	return n
}

// condition returns the node's condition of type t (fails when absent).
func condition(t *testing.T, node *corev1.Node, typ corev1.NodeConditionType) corev1.NodeCondition {
	t.Helper()
	c := findCondition(node, typ)
	require.NotNil(t, c, "condition %s", typ)
	return *c
}

// getNode reads the node from the client.
func getNode(t *testing.T, c *fake.Clientset) *corev1.Node {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	return n
}

// q parses a quantity.
func q(s string) resource.Quantity { return resource.MustParse(s) }

// assertQuantity checks list[name] equals want.
func assertQuantity(t *testing.T, list corev1.ResourceList, name corev1.ResourceName, want string) {
	t.Helper()
	got, ok := list[name]
	if !ok {
		t.Errorf("%s missing", name)
		return
	}
	if got.Cmp(q(want)) != 0 {
		t.Errorf("%s = %s, want %s", name, got.String(), want)
	}
}

// conflictOnce returns a reactor answering the next *n updates of
// subresource sub with a Conflict.
func conflictOnce(n *int, sub string) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != sub || *n == 0 {
			return false, nil, nil
		}
		*n--
		gr := a.GetResource().GroupResource()
		return true, nil, apierrors.NewConflict(gr, "node-1", errors.New("the object has been modified"))
	}
}
