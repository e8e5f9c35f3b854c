package validation

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func (v *Validator) validateJob(j *batchv1.Job) field.ErrorList {
	errs := validateObjectMeta(&j.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, v.validateJobSpec(&j.Spec, field.NewPath("spec"))...)
}

// validateJobSpec validates a Job's spec. A nil selector is accepted unless
// manualSelector is true: Kubernetes' Job strategy generates the selector
// (and the matching template labels) before validation.
func (v *Validator) validateJobSpec(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, c := range []struct {
		name string
		n    *int32
	}{{"parallelism", spec.Parallelism}, {"completions", spec.Completions}, {"backoffLimit", spec.BackoffLimit},
		{"ttlSecondsAfterFinished", spec.TTLSecondsAfterFinished}, {"backoffLimitPerIndex", spec.BackoffLimitPerIndex},
		{"maxFailedIndexes", spec.MaxFailedIndexes}} {
		if c.n != nil {
			errs = append(errs, validateNonnegative(int64(*c.n), p.Child(c.name))...)
		}
	}
	if spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, validateNonnegative(*spec.ActiveDeadlineSeconds, p.Child("activeDeadlineSeconds"))...)
	}
	indexed := spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion
	if spec.CompletionMode != nil && !indexed && *spec.CompletionMode != batchv1.NonIndexedCompletion {
		errs = append(errs, field.NotSupported(p.Child("completionMode"), *spec.CompletionMode, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
	}
	if indexed && spec.Completions == nil {
		errs = append(errs, field.Required(p.Child("completions"), "when completion mode is Indexed"))
	}
	if !indexed && spec.BackoffLimitPerIndex != nil {
		errs = append(errs, field.Invalid(p.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
	}
	if spec.MaxFailedIndexes != nil && spec.BackoffLimitPerIndex == nil {
		errs = append(errs, field.Required(p.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	if rp := spec.PodReplacementPolicy; rp != nil && *rp != batchv1.TerminatingOrFailed && *rp != batchv1.Failed {
		errs = append(errs, field.NotSupported(p.Child("podReplacementPolicy"), *rp, []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed}))
	}

	switch {
	case spec.Selector == nil && spec.ManualSelector != nil && *spec.ManualSelector:
		errs = append(errs, field.Required(p.Child("selector"), ""))
	case spec.Selector != nil:
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
		if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
			errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), spec.Template.Labels, selectorMismatchMsg))
		}
	}

	tp := p.Child("template")
	errs = append(errs, v.validatePodTemplateSpec(&spec.Template, tp)...)
	switch rp := spec.Template.Spec.RestartPolicy; {
	case spec.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), rp, []corev1.RestartPolicy{corev1.RestartPolicyNever}))
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), rp, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	}
	return errs
}

// validateJobUpdate: selector, completions, completionMode, podFailurePolicy
// and the pod template are immutable. As in Kubernetes, a suspended Job that
// never started may still change its template's scheduling directives
// (nodeSelector, affinity, tolerations, schedulingGates) and metadata.
func (v *Validator) validateJobUpdate(j, old *batchv1.Job) field.ErrorList {
	errs := validateObjectMetaUpdate(&j.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	p := field.NewPath("spec")
	errs = append(errs, v.validateJobSpec(&j.Spec, p)...)
	errs = append(errs, validateImmutable(j.Spec.Completions, old.Spec.Completions, p.Child("completions"))...)
	errs = append(errs, validateImmutable(j.Spec.Selector, old.Spec.Selector, p.Child("selector"))...)
	errs = append(errs, validateImmutable(j.Spec.CompletionMode, old.Spec.CompletionMode, p.Child("completionMode"))...)
	errs = append(errs, validateImmutable(j.Spec.PodFailurePolicy, old.Spec.PodFailurePolicy, p.Child("podFailurePolicy"))...)
	tmpl := j.Spec.Template
	if old.Spec.Suspend != nil && *old.Spec.Suspend && old.Status.StartTime == nil {
		t := tmpl.DeepCopy()
		t.Labels, t.Annotations = old.Spec.Template.Labels, old.Spec.Template.Annotations
		t.Spec.NodeSelector, t.Spec.Affinity = old.Spec.Template.Spec.NodeSelector, old.Spec.Template.Spec.Affinity
		t.Spec.Tolerations, t.Spec.SchedulingGates = old.Spec.Template.Spec.Tolerations, old.Spec.Template.Spec.SchedulingGates
		tmpl = *t
	}
	if !equality.Semantic.DeepEqual(tmpl, old.Spec.Template) {
		errs = append(errs, field.Invalid(p.Child("template"), j.Spec.Template, fieldImmutableErrorMsg))
	}
	return errs
}

func validateJobStatusUpdate(j, old *batchv1.Job) field.ErrorList {
	errs := validateObjectMetaUpdate(&j.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	st, p := &j.Status, field.NewPath("status")
	errs = append(errs, validateNonnegative(int64(st.Active), p.Child("active"))...)
	errs = append(errs, validateNonnegative(int64(st.Succeeded), p.Child("succeeded"))...)
	errs = append(errs, validateNonnegative(int64(st.Failed), p.Child("failed"))...)
	if st.Ready != nil {
		errs = append(errs, validateNonnegative(int64(*st.Ready), p.Child("ready"))...)
	}
	if st.Terminating != nil {
		errs = append(errs, validateNonnegative(int64(*st.Terminating), p.Child("terminating"))...)
	}
	return errs
}
