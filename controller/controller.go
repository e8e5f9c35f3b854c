package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Controller is one reconcile loop of the controller manager.
//
// A controller registers the informers it needs (and its event handlers) in
// its constructor, so that the Manager can start the shared informer factory
// once every controller has asked for its informers. Run waits for those
// caches to sync, runs workers goroutines over its work queue and returns
// when ctx is cancelled (nil then) or on a fatal error. Run is called once.
type Controller interface {
	// Name is the controller's name, e.g. "replicaset"; it labels logs,
	// queue metrics and the event source component.
	Name() string
	// Run blocks until ctx is done.
	Run(ctx context.Context, workers int) error
}

// NewFunc constructs a controller from the shared Context. Configuration
// specific to one controller (grace periods, CIDRs, …) is captured by the
// closure, e.g. `func(c *controller.Context) (controller.Controller, error)
// { return nodelifecycle.New(c, cfg) }`.
type NewFunc func(*Context) (Controller, error)

// Context is what every controller shares with the others in one Manager.
type Context struct {
	// Client talks to the API server.
	Client kubernetes.Interface
	// Informers is the one shared informer factory; ask it for informers in
	// the constructor (e.g. Informers.Core().V1().Pods()). The Manager
	// starts it after all constructors ran, and again after each Run began
	// so informers requested late are started too.
	Informers informers.SharedInformerFactory
	// Recorder returns an event recorder whose events name component as
	// their source (Kubernetes uses e.g. "replicaset-controller").
	Recorder func(component string) record.EventRecorder
	// Clock is the time source for every deadline, backoff and
	// availability computation (a fake clock in tests).
	Clock clock.Clock
	// Logger is the base logger; the Manager passes each controller a
	// logger with a "controller" attribute already set.
	Logger *slog.Logger
	// ResyncPeriod is the informer resync period of the factory
	// (0: no periodic resync); controllers may use it for their own
	// periodic re-checks.
	ResyncPeriod time.Duration
}

// ManagerConfig configures a Manager. Only Client is required.
type ManagerConfig struct {
	// Client talks to the API server (required).
	Client kubernetes.Interface
	// Workers is the number of workers given to each controller's Run
	// (default DefaultWorkers); Workers per name overrides it.
	Workers int
	// WorkersPerController overrides Workers for the named controllers.
	WorkersPerController map[string]int
	// ResyncPeriod is the shared informer factory's resync period
	// (default 0, no resync: the controllers are level-triggered on watch
	// events and requeue themselves when time matters).
	ResyncPeriod time.Duration
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Recorder, if set, replaces the default event recorders (which write
	// core/v1 Events through Client).
	Recorder func(component string) record.EventRecorder
	// Informers, if set, is used instead of a new factory over Client.
	Informers informers.SharedInformerFactory
}

// DefaultWorkers is the number of concurrent workers per controller when
// ManagerConfig.Workers is 0 (Kubernetes uses 5 for ReplicaSets and
// Deployments).
const DefaultWorkers = 5

// The Manager (manager.go):
//
//	func NewManager(cfg ManagerConfig) (*Manager, error)
//	func (m *Manager) Register(name string, newFn NewFunc) error // before Run; ErrDuplicate, ErrStarted
//	func (m *Manager) Context() *Context                         // the shared Context
//	func (c *Context) Validate() error                             // ErrIncompleteContext when Client, Informers, Recorder or Clock is missing
//	func (m *Manager) Run(ctx context.Context) error              // construct all, start informers, run all; blocks until ctx done
//
// Shared helpers for controllers:
//
//	queue.go:        NewQueue[T comparable](name string) workqueue.TypedRateLimitingInterface[T]
//	                 NewQueueWithClock[T comparable](name string, clk clock.Clock) workqueue.TypedRateLimitingInterface[T]
//	                 RunWorkers[T comparable](ctx, name string, workers int, q, sync func(ctx context.Context, key T) error, log *slog.Logger)
//	                 type RequeueAfter time.Duration  // a sync error meaning "again after d", not a failure
//	                 WaitForCacheSync(ctx, name string, synced ...cache.InformerSynced) error   // ErrCacheSync
//	                 KeyFunc(obj any) (string, error)  // namespace/name, accepts DeletedFinalStateUnknown
//	expectations.go: NewExpectations(clock.PassiveClock) *Expectations  // Kubernetes' ControllerExpectations
//	                   Satisfied(key) bool; ExpectCreations(key, n); ExpectDeletions(key, n); Set(key, add, del)
//	                   Raise/Lower(key, add, del); CreationObserved(key); DeletionObserved(key); Get(key); Delete(key)
//	                 NewUIDTrackingExpectations(clock.PassiveClock) *UIDTrackingExpectations
//	                   ExpectDeletions(key string, objKeys []string); DeletionObserved(key, objKey string)
//	podcontrol.go:   type PodControl interface { CreatePod; DeletePod; PatchPod }; RealPodControl{Client, Recorder}
//	                 PodFromTemplate(template, owner, ref) (*corev1.Pod, error)
//	                 SlowStartBatch(count, initialBatch int, fn func() error) (int, error)
//	refmanager.go:   OwnerRef(owner metav1.Object, gvk) *metav1.OwnerReference  // controller + blockOwnerDeletion
//	                 type RefManager{Controller, Kind, Selector, CanAdopt}: Claim, ClaimPods, ClaimReplicaSets
//	                 RecheckDeletionTimestamp, FreshUID, AdoptPatch, ReleasePatch
//	pods.go:         IsPodActive, FilterActivePods, IsPodReady, PodReadyCondition,
//	                 IsPodAvailable(p, minReadySeconds int32, now time.Time) bool, AvailableIn, PodKey, PodKeys,
//	                 RankPodsForDeletion(pods, related []*corev1.Pod, now time.Time)
//	index.go:        AddControllerUIDIndex(cache.SharedIndexInformer) error; ByControllerUID[T](indexer, uid, namespace) ([]T, error)
//	                 ControllerUIDIndex, OrphanIndexKey(namespace)

// ErrIncompleteContext is returned by constructors given a Context without
// a required collaborator.
var ErrIncompleteContext = errors.New("incomplete controller context")

// Validate reports a missing Client, Informers, Recorder or Clock (a Logger
// is optional). Constructors call it first.
func (c *Context) Validate() error {
	switch {
	case c == nil:
		return fmt.Errorf("%w: nil", ErrIncompleteContext)
	case c.Client == nil:
		return fmt.Errorf("%w: no Client", ErrIncompleteContext)
	case c.Informers == nil:
		return fmt.Errorf("%w: no Informers", ErrIncompleteContext)
	case c.Recorder == nil:
		return fmt.Errorf("%w: no Recorder", ErrIncompleteContext)
	case c.Clock == nil:
		return fmt.Errorf("%w: no Clock", ErrIncompleteContext)
	}
	return nil
}
