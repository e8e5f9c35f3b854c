// Package leader runs a control-plane component only while it holds a
// coordination.k8s.io Lease, so that several scheduler or controller-manager
// processes (one per API server of a highly available control plane) keep
// exactly one of each active, and a standby takes over when the leader
// dies: its lease is not renewed and expires after the lease duration.
//
// It is client-go's leader election (tools/leaderelection with a Lease
// lock) behind the flags kube-scheduler and kube-controller-manager use
// (--leader-elect, --leader-elect-lease-duration, ...), so a podkit
// component and a Kubernetes one of the same kind exclude each other too:
// they use the same lease names (kube-scheduler, kube-controller-manager in
// kube-system). As Kubernetes' components do, a leader that loses its
// lease stops: Run returns ErrLost and the process exits, to be restarted
// as a candidate, rather than risk two active instances.
package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLost: the lease was lost while leading (not renewed within the renew
// deadline); the component has been stopped.
var ErrLost = errors.New("leader election lost")

// Defaults, as kube-scheduler's and kube-controller-manager's.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	DefaultNamespace     = "kube-system"
)

// Options are the leader-election settings.
type Options struct {
	// Enabled turns leader election on (--leader-elect); off, Run runs
	// the component at once.
	Enabled bool
	// LeaseDuration is how long standbys wait after the last renewal
	// before taking over; RenewDeadline how long the leader keeps trying
	// to renew before it stops; RetryPeriod the pace of both.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ResourceName and ResourceNamespace name the Lease.
	ResourceName, ResourceNamespace string
	// Identity is this candidate's holder identity; default
	// <hostname>_<random uuid>.
	Identity string
}

// DefaultOptions returns enabled leader election on the Lease name in
// kube-system with Kubernetes' timings.
func DefaultOptions(name string) Options {
	return Options{Enabled: true, LeaseDuration: DefaultLeaseDuration, RenewDeadline: DefaultRenewDeadline,
		RetryPeriod: DefaultRetryPeriod, ResourceName: name, ResourceNamespace: DefaultNamespace}
}

// AddFlags registers the flags with kube-scheduler's names.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Enabled, "leader-elect", o.Enabled, "run only while holding the leader Lease, so that one of several replicas is active")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "how long standbys wait after the leader's last renewal before taking over")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "how long the leader retries renewing before it stops leading; less than the lease duration")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "wait between attempts to acquire or renew the lease")
	fs.StringVar(&o.ResourceName, "leader-elect-resource-name", o.ResourceName, "name of the Lease")
	fs.StringVar(&o.ResourceNamespace, "leader-elect-resource-namespace", o.ResourceNamespace, "namespace of the Lease")
}

// Run calls lead while this process holds the lease. It returns when ctx
// ends (releasing the lease, so a standby takes over at once) with lead's
// result, when lead returns (releasing the lease) with its result, or with
// ErrLost when the lease could not be renewed, after lead returned from
// its cancelled context. With o.Enabled false it just calls lead(ctx).
func Run(ctx context.Context, client kubernetes.Interface, o Options, log *slog.Logger, lead func(ctx context.Context) error) error {
	if !o.Enabled {
		return lead(ctx)
	}
	if log == nil {
		log = slog.Default()
	}
	if o.ResourceName == "" {
		return errors.New("leader election: no lease name")
	}
	if o.ResourceNamespace == "" {
		o.ResourceNamespace = DefaultNamespace
	}
	if o.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("leader election identity: %w", err)
		}
		o.Identity = host + "_" + string(uuid.NewUUID())
	}
	lock := &recordingLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.ResourceNamespace, Name: o.ResourceName},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		leadErr error
		// byItself: lead returned before its context was cancelled.
		byItself bool
		done     = make(chan struct{})
	)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            o.ResourceName,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				log.Info("leading", "lease", o.ResourceNamespace+"/"+o.ResourceName, "identity", o.Identity)
				leadErr = lead(lctx)
				byItself = lctx.Err() == nil
				close(done)
				stop() // give the lease up if still held
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != o.Identity {
					log.Info("another instance leads", "lease", o.ResourceNamespace+"/"+o.ResourceName, "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	le.Run(runCtx)
	if !lock.acquired.Load() {
		return ctx.Err() // never led: OnStartedLeading was not called
	}
	<-done
	if ctx.Err() != nil || byItself {
		return leadErr
	}
	log.Error("leader election lost", "lease", o.ResourceNamespace+"/"+o.ResourceName, "identity", o.Identity)
	return ErrLost
}

// recordingLock notes whether this candidate ever took the lease: client-go
// calls OnStartedLeading exactly when it did.
type recordingLock struct {
	resourcelock.Interface
	acquired atomic.Bool
}

func (l *recordingLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, r)
	l.note(err, r)
	return err
}

func (l *recordingLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, r)
	l.note(err, r)
	return err
}

func (l *recordingLock) note(err error, r resourcelock.LeaderElectionRecord) {
	if err == nil && r.HolderIdentity != "" && r.HolderIdentity == l.Identity() {
		l.acquired.Store(true)
	}
}
