package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Event length limits, as in Kubernetes.
const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

// validateEvent validates a core/v1 Event. Old-style events (no eventTime)
// are lenient, as Kubernetes keeps them for old clients: only the namespace
// must agree with involvedObject. New-style events (eventTime set) also need
// the reporting fields, action and reason, within their length limits.
func (v *Validator) validateEvent(e *corev1.Event) field.ErrorList {
	errs := validateObjectMeta(&e.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, v.validateEventFields(e)...)
}

func (v *Validator) validateEventFields(e *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	ioNS := field.NewPath("involvedObject", "namespace")
	if e.EventTime.IsZero() {
		switch {
		case e.InvolvedObject.Namespace == "":
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(ioNS, e.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		case e.Namespace != e.InvolvedObject.Namespace:
			errs = append(errs, field.Invalid(ioNS, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(ioNS, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		errs = append(errs, validateReportingFields(e.ReportingController, "reportingComponent", e.ReportingInstance, e.Action, e.Reason, e.Message, "message")...)
	}
	gv, err := schema.ParseGroupVersion(e.InvolvedObject.APIVersion)
	if err == nil && e.InvolvedObject.Kind != "" {
		if namespaced, known := v.Namespaced(schema.GroupKind{Group: gv.Group, Kind: e.InvolvedObject.Kind}); known {
			if namespaced && e.InvolvedObject.Namespace == "" {
				errs = append(errs, field.Required(ioNS, fmt.Sprintf("required for kind %s", e.InvolvedObject.Kind)))
			}
			if !namespaced && e.InvolvedObject.Namespace != "" {
				errs = append(errs, field.Invalid(ioNS, e.InvolvedObject.Namespace, fmt.Sprintf("not allowed for kind %s", e.InvolvedObject.Kind)))
			}
		}
	}
	return errs
}

// validateReportingFields checks the fields new-style events require.
func validateReportingFields(controller, controllerField, instance, action, reason, note, noteField string) field.ErrorList {
	var errs field.ErrorList
	if controller == "" {
		errs = append(errs, field.Required(field.NewPath(controllerField), ""))
	} else {
		errs = append(errs, validateQualifiedName(controller, field.NewPath(controllerField))...)
	}
	if instance == "" {
		errs = append(errs, field.Required(field.NewPath("reportingInstance"), ""))
	}
	if len(instance) > reportingInstanceLengthLimit {
		errs = append(errs, field.Invalid(field.NewPath("reportingInstance"), "", fmt.Sprintf("can have at most %v characters", reportingInstanceLengthLimit)))
	}
	if action == "" {
		errs = append(errs, field.Required(field.NewPath("action"), ""))
	}
	if len(action) > actionLengthLimit {
		errs = append(errs, field.Invalid(field.NewPath("action"), "", fmt.Sprintf("can have at most %v characters", actionLengthLimit)))
	}
	if reason == "" {
		errs = append(errs, field.Required(field.NewPath("reason"), ""))
	}
	if len(reason) > reasonLengthLimit {
		errs = append(errs, field.Invalid(field.NewPath("reason"), "", fmt.Sprintf("can have at most %v characters", reasonLengthLimit)))
	}
	if len(note) > noteLengthLimit {
		errs = append(errs, field.Invalid(field.NewPath(noteField), "", fmt.Sprintf("can have at most %v characters", noteLengthLimit)))
	}
	return errs
}

// validateEventUpdate: as Kubernetes, an event update is validated like a
// new event plus the ObjectMeta rules.
func (v *Validator) validateEventUpdate(e, old *corev1.Event) field.ErrorList {
	errs := validateObjectMetaUpdate(&e.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, v.validateEventFields(e)...)
}

// validateEventsV1Event validates an events.k8s.io/v1 Event: eventTime,
// reporting fields, action and reason required; type Normal or Warning.
func (v *Validator) validateEventsV1Event(e *eventsv1.Event) field.ErrorList {
	errs := validateObjectMeta(&e.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateEventsV1Fields(e)...)
}

func validateEventsV1Fields(e *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	if !e.DeprecatedFirstTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedFirstTimestamp"), "", "needs to be unset"))
	}
	if !e.DeprecatedLastTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedLastTimestamp"), "", "needs to be unset"))
	}
	if e.DeprecatedCount != 0 {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedCount"), "", "needs to be unset"))
	}
	if e.DeprecatedSource.Component != "" || e.DeprecatedSource.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedSource"), "", "needs to be unset"))
	}
	if e.Series != nil {
		if e.Series.Count < 2 {
			errs = append(errs, field.Invalid(field.NewPath("series", "count"), "", "should be at least 2"))
		}
		if e.Series.LastObservedTime.IsZero() {
			errs = append(errs, field.Required(field.NewPath("series", "lastObservedTime"), ""))
		}
	}
	return append(errs, validateReportingFields(e.ReportingController, "reportingController", e.ReportingInstance, e.Action, e.Reason, e.Note, "note")...)
}

// validateEventsV1EventUpdate: the descriptive fields of a new-style event
// are immutable; the series may change.
func (v *Validator) validateEventsV1EventUpdate(e, old *eventsv1.Event) field.ErrorList {
	errs := validateObjectMetaUpdate(&e.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateEventsV1Fields(e)...)
	for _, c := range []struct {
		name     string
		cur, old any
	}{{"regarding", e.Regarding, old.Regarding}, {"related", e.Related, old.Related},
		{"reportingController", e.ReportingController, old.ReportingController},
		{"reportingInstance", e.ReportingInstance, old.ReportingInstance},
		{"action", e.Action, old.Action}, {"reason", e.Reason, old.Reason},
		{"note", e.Note, old.Note}, {"type", e.Type, old.Type}, {"eventTime", e.EventTime, old.EventTime}} {
		errs = append(errs, validateImmutable(c.cur, c.old, field.NewPath(c.name))...)
	}
	return errs
}
