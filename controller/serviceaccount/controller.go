package serviceaccount

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/podkit/podkit/controller"
)

// Name is the controller's name in the controller manager.
const Name = "serviceaccount"

// DefaultServiceAccountName is the account every namespace gets.
const DefaultServiceAccountName = "default"

// Config configures the controller. The zero value ensures the `default`
// account.
type Config struct {
	// ServiceAccounts are the accounts every active namespace must have;
	// only their name, labels, annotations and the automount setting are
	// used. Nil means one account named DefaultServiceAccountName.
	ServiceAccounts []corev1.ServiceAccount
}

// Controller keeps the configured ServiceAccounts in every active namespace.
type Controller struct {
	client     kubernetes.Interface
	namespaces corelisters.NamespaceLister
	accounts   corelisters.ServiceAccountLister
	synced     []cache.InformerSynced
	wanted     []corev1.ServiceAccount
	managed    map[string]bool
	queue      workqueue.TypedRateLimitingInterface[string]
	log        *slog.Logger
}

var _ controller.Controller = (*Controller)(nil)

// New returns the controller, registering its namespace and service account
// informers in c.Informers.
func New(c *controller.Context, cfg Config) (*Controller, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	wanted := cfg.ServiceAccounts
	if wanted == nil {
		wanted = []corev1.ServiceAccount{{ObjectMeta: metav1.ObjectMeta{Name: DefaultServiceAccountName}}}
	}
	managed := map[string]bool{}
	for _, sa := range wanted {
		if sa.Name == "" {
			return nil, errors.New("serviceaccount: a configured service account has no name")
		}
		if managed[sa.Name] {
			return nil, fmt.Errorf("serviceaccount: service account %q configured twice", sa.Name)
		}
		managed[sa.Name] = true
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	nsInf := c.Informers.Core().V1().Namespaces()
	saInf := c.Informers.Core().V1().ServiceAccounts()
	ctrl := &Controller{
		client:     c.Client,
		namespaces: nsInf.Lister(),
		accounts:   saInf.Lister(),
		synced:     []cache.InformerSynced{nsInf.Informer().HasSynced, saInf.Informer().HasSynced},
		wanted:     wanted,
		managed:    managed,
		queue:      controller.NewQueue[string]("serviceaccount"),
		log:        log,
	}
	if _, err := nsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.enqueueNamespace,
		UpdateFunc: func(_, cur any) { ctrl.enqueueNamespace(cur) },
	}); err != nil {
		return nil, fmt.Errorf("serviceaccount: adding namespace handler: %w", err)
	}
	if _, err := saInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: ctrl.accountDeleted,
	}); err != nil {
		return nil, fmt.Errorf("serviceaccount: adding service account handler: %w", err)
	}
	return ctrl, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run implements controller.Controller.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if err := controller.WaitForCacheSync(ctx, Name, c.synced...); err != nil {
		return err
	}
	controller.RunWorkers(ctx, Name, workers, c.queue, c.sync, c.log)
	return nil
}

func (c *Controller) enqueueNamespace(obj any) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	// Only active namespaces get accounts; a Terminating one is skipped
	// here and again (authoritatively) in sync.
	if ns.Status.Phase != corev1.NamespaceActive && ns.Status.Phase != "" {
		return
	}
	c.queue.Add(ns.Name)
}

func (c *Controller) accountDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok || !c.managed[sa.Name] {
		return
	}
	c.queue.Add(sa.Namespace)
}

// sync creates the wanted accounts missing from one namespace.
func (c *Controller) sync(ctx context.Context, namespace string) error {
	ns, err := c.namespaces.Get(namespace)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting namespace %s: %w", namespace, err)
	}
	if ns.Status.Phase != corev1.NamespaceActive || ns.DeletionTimestamp != nil {
		return nil
	}
	var errs []error
	for i := range c.wanted {
		want := &c.wanted[i]
		switch _, err := c.accounts.ServiceAccounts(namespace).Get(want.Name); {
		case err == nil:
			continue
		case !apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("reading service account %s/%s: %w", namespace, want.Name, err))
			continue
		}
		sa := &corev1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{
				Name: want.Name, Namespace: namespace,
				Labels: want.Labels, Annotations: want.Annotations,
			},
			AutomountServiceAccountToken: want.AutomountServiceAccountToken,
		}
		_, err := c.client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
		switch {
		case err == nil:
			c.log.Debug("created service account", "namespace", namespace, "name", want.Name)
		case apierrors.IsAlreadyExists(err):
			// Created by the API server or a concurrent sync: the goal holds.
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) || apierrors.IsNotFound(err):
			// The namespace began terminating or went away meanwhile.
			return nil
		default:
			errs = append(errs, fmt.Errorf("creating service account %s/%s: %w", namespace, want.Name, err))
		}
	}
	return errors.Join(errs...)
}
