package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// gvrVerbs is a discovered namespaced resource and the verbs it serves.
type gvrVerbs struct {
	gvr   schema.GroupVersionResource
	verbs []string
}

func (g gvrVerbs) has(verb string) bool { return slices.Contains(g.verbs, verb) }

// remaining is what one resource still has in the namespace after the
// delete call.
type remaining struct {
	estimate   time.Duration
	count      int
	finalizers map[string]int
}

// deleteAllContent deletes every namespaced object in ns and records the
// outcome in ns's conditions. It returns how long the remaining content is
// estimated to take to go away (0: nothing remains).
func (c *Controller) deleteAllContent(ctx context.Context, ns *corev1.Namespace) (time.Duration, error) {
	var errs []error
	conds := conditionUpdater{now: c.clock.Now()}
	// Discovery errors are not fatal: delete what can be found.
	resources, derr, perr := c.discoverResources()
	if derr != nil {
		errs = append(errs, derr)
		conds.discoveryFailed(derr)
	}
	if perr != nil {
		errs = append(errs, perr)
		conds.parsingFailed(perr)
	}
	totals := contentTotals{byResource: map[schema.GroupVersionResource]int{}, byFinalizer: map[string]int{}}
	var estimate time.Duration
	for _, r := range resources {
		rem, err := c.deleteResource(ctx, r, ns)
		if err != nil {
			errs = append(errs, err)
			conds.deleteFailed(err)
		}
		estimate = max(estimate, rem.estimate)
		if rem.count > 0 {
			totals.byResource[r.gvr] = rem.count
			for f, n := range rem.finalizers {
				totals.byFinalizer[f] += n
			}
		}
	}
	conds.contentRemaining(totals)
	if conds.apply(&ns.Status) {
		if _, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			// The next sync writes them again; deletion goes on meanwhile.
			c.log.Warn("updating namespace deletion conditions", "namespace", ns.Name, "err", err)
		}
	}
	return estimate, errors.Join(errs...)
}

// discoverResources returns the namespaced resources that can be deleted,
// in a stable order, with the discovery error and the group version parsing
// error: after a partial failure what was found is still returned.
func (c *Controller) discoverResources() (out []gvrVerbs, derr, perr error) {
	lists, err := discovery.ServerPreferredNamespacedResources(c.discovery)
	if err != nil {
		derr = fmt.Errorf("discovering namespaced resources: %w", err)
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			perr = errors.Join(perr, fmt.Errorf("parsing group version %q: %w", l.GroupVersion, err))
			continue
		}
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "delete") {
				continue
			}
			out = append(out, gvrVerbs{gvr: gv.WithResource(r.Name), verbs: r.Verbs})
		}
	}
	slices.SortFunc(out, func(a, b gvrVerbs) int {
		if a.gvr.Group != b.gvr.Group {
			return compare(a.gvr.Group, b.gvr.Group)
		}
		return compare(a.gvr.Resource, b.gvr.Resource)
	})
	return out, derr, perr
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// deleteResource deletes the objects of one resource in the namespace and
// reports what is left.
func (c *Controller) deleteResource(ctx context.Context, r gvrVerbs, ns *corev1.Namespace) (remaining, error) {
	estimate, err := c.estimate(ctx, r.gvr, ns)
	if err != nil {
		return remaining{}, err
	}
	res := c.metadata.Resource(r.gvr).Namespace(ns.Name)
	// Background: the garbage collector must not add the orphan finalizer
	// to what the namespace controller deletes generically.
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	collected := false
	if r.has("deletecollection") {
		err := res.DeleteCollection(ctx, opts, metav1.ListOptions{})
		switch {
		case err == nil:
			collected = true
		case apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err):
		default:
			return remaining{estimate: estimate}, fmt.Errorf("deleting collection %s in %s: %w", r.gvr, ns.Name, err)
		}
	}
	if !r.has("list") {
		return remaining{estimate: estimate}, nil
	}
	if !collected {
		list, err := res.List(ctx, metav1.ListOptions{})
		if err != nil && !apierrors.IsMethodNotSupported(err) && !apierrors.IsNotFound(err) {
			return remaining{estimate: estimate}, fmt.Errorf("listing %s in %s: %w", r.gvr, ns.Name, err)
		}
		if list != nil {
			for _, item := range list.Items {
				err := res.Delete(ctx, item.Name, opts)
				if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
					return remaining{estimate: estimate}, fmt.Errorf("deleting %s %s/%s: %w", r.gvr, ns.Name, item.Name, err)
				}
			}
		}
	}
	list, err := res.List(ctx, metav1.ListOptions{})
	if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
		return remaining{estimate: estimate}, nil
	}
	if err != nil {
		return remaining{estimate: estimate}, fmt.Errorf("verifying %s in %s are gone: %w", r.gvr, ns.Name, err)
	}
	if len(list.Items) == 0 {
		return remaining{}, nil
	}
	finalizers := map[string]int{}
	for _, item := range list.Items {
		for _, f := range item.Finalizers {
			finalizers[f]++
		}
	}
	rem := remaining{estimate: estimate, count: len(list.Items), finalizers: finalizers}
	if estimate > 0 {
		return rem, nil
	}
	if len(finalizers) > 0 {
		// Finalizers are normal (the garbage collector, a job's pods):
		// allow them some time.
		rem.estimate = c.opts.finalizerEstimate
		if rem.estimate == 0 {
			rem.estimate = time.Millisecond
		}
		return rem, nil
	}
	// Nothing explains why the objects are still there.
	return rem, fmt.Errorf("unexpected items still remain in namespace %s for %s", ns.Name, r.gvr)
}

// estimate returns how long the resource's objects may take to terminate
// gracefully: for pods, the longest terminationGracePeriodSeconds of the
// namespace's live pods, counted from the namespace's deletion; 0 for
// everything else.
func (c *Controller) estimate(ctx context.Context, gvr schema.GroupVersionResource, ns *corev1.Namespace) (time.Duration, error) {
	if gvr.GroupResource() != corev1.Resource("pods") {
		return 0, nil
	}
	pods, err := c.client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing pods of %s for the grace estimate: %w", ns.Name, err)
	}
	var grace int64
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if g := p.Spec.TerminationGracePeriodSeconds; g != nil && *g > grace {
			grace = *g
		}
	}
	est := time.Duration(grace) * time.Second
	if c.clock.Since(ns.DeletionTimestamp.Time) >= est {
		return 0, nil
	}
	return est, nil
}
