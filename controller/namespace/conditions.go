package namespace

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// conditionTypes are the namespace conditions the controller maintains,
// each False with its "ok" reason and message while nothing is wrong.
var conditionTypes = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

// The reasons and messages Kubernetes uses.
var (
	okReasons = map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "ResourcesDiscovered",
		corev1.NamespaceDeletionGVParsingFailure: "ParsedGroupVersions",
		corev1.NamespaceDeletionContentFailure:   "ContentDeleted",
		corev1.NamespaceContentRemaining:         "ContentRemoved",
		corev1.NamespaceFinalizersRemaining:      "ContentHasNoFinalizers",
	}
	okMessages = map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "All resources successfully discovered",
		corev1.NamespaceDeletionGVParsingFailure: "All legacy kube types successfully parsed",
		corev1.NamespaceDeletionContentFailure:   "All content successfully deleted, may be waiting on finalization",
		corev1.NamespaceContentRemaining:         "All content successfully removed",
		corev1.NamespaceFinalizersRemaining:      "All content-preserving finalizers finished",
	}
)

// contentTotals counts what remains by resource and by finalizer.
type contentTotals struct {
	byResource  map[schema.GroupVersionResource]int
	byFinalizer map[string]int
}

// conditionUpdater collects the failure conditions of one deletion pass.
type conditionUpdater struct {
	now        time.Time
	conditions []corev1.NamespaceCondition
	deleteErrs []string
}

func (u *conditionUpdater) add(t corev1.NamespaceConditionType, reason, msg string) {
	u.conditions = append(u.conditions, corev1.NamespaceCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(u.now),
	})
}

func (u *conditionUpdater) discoveryFailed(err error) {
	var gerr *discovery.ErrGroupDiscoveryFailed
	msg := err.Error()
	if errors.As(err, &gerr) {
		msg = fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(gerr.Groups), gerr)
	}
	u.add(corev1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", msg)
}

func (u *conditionUpdater) parsingFailed(err error) {
	u.add(corev1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", err.Error())
}

func (u *conditionUpdater) deleteFailed(err error) { u.deleteErrs = append(u.deleteErrs, err.Error()) }

func (u *conditionUpdater) contentRemaining(t contentTotals) {
	if len(t.byResource) > 0 {
		var parts []string
		for gvr, n := range t.byResource {
			parts = append(parts, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
		}
		slices.Sort(parts)
		u.add(corev1.NamespaceContentRemaining, "SomeResourcesRemain", "Some resources are remaining: "+strings.Join(parts, ", "))
	}
	if len(t.byFinalizer) > 0 {
		var parts []string
		for f, n := range t.byFinalizer {
			parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, n))
		}
		slices.Sort(parts)
		u.add(corev1.NamespaceFinalizersRemaining, "SomeFinalizersRemain",
			"Some content in the namespace has finalizers remaining: "+strings.Join(parts, ", "))
	}
}

// apply writes the pass's conditions into status (the ok variant for every
// type without a failure) and reports whether anything changed.
func (u *conditionUpdater) apply(status *corev1.NamespaceStatus) bool {
	if len(u.deleteErrs) > 0 {
		msgs := slices.Clone(u.deleteErrs)
		slices.Sort(msgs)
		u.add(corev1.NamespaceDeletionContentFailure, "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(msgs), strings.Join(msgs, ", ")))
	}
	changed := false
	for _, t := range conditionTypes {
		want := findCondition(u.conditions, t)
		if want == nil {
			want = &corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: okReasons[t],
				Message: okMessages[t], LastTransitionTime: metav1.NewTime(u.now)}
		}
		have := findCondition(status.Conditions, t)
		switch {
		case have == nil:
			status.Conditions = append(status.Conditions, *want)
			changed = true
		case have.Status != want.Status || have.Reason != want.Reason || have.Message != want.Message:
			if have.Status != want.Status {
				have.LastTransitionTime = want.LastTransitionTime
			}
			have.Status, have.Reason, have.Message = want.Status, want.Reason, want.Message
			changed = true
		}
	}
	return changed
}

func findCondition(list []corev1.NamespaceCondition, t corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}
