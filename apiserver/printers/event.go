package printers

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
)

// coreEventCells computes LAST SEEN, TYPE, REASON, OBJECT, SUBOBJECT,
// SOURCE, MESSAGE, FIRST SEEN, COUNT, NAME of a core/v1 Event.
func coreEventCells(c *cellContext, e *corev1.Event) []any {
	firstSeen := c.since(e.FirstTimestamp)
	if e.FirstTimestamp.IsZero() {
		firstSeen = c.sinceMicro(e.EventTime)
	}
	lastSeen := c.since(e.LastTimestamp)
	if e.LastTimestamp.IsZero() {
		lastSeen = firstSeen
	}
	count := e.Count
	if e.Series != nil {
		lastSeen = c.sinceMicro(e.Series.LastObservedTime)
		count = e.Series.Count
	} else if count == 0 {
		count = 1 // singleton events of the events.k8s.io API carry no count
	}

	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target = fmt.Sprintf("%s/%s", target, e.InvolvedObject.Name)
	}
	return []any{
		lastSeen,
		e.Type,
		e.Reason,
		target,
		e.InvolvedObject.FieldPath,
		eventSource(e.Source, e.ReportingController, e.ReportingInstance),
		strings.TrimSpace(e.Message),
		firstSeen,
		int64(count),
		e.Name,
	}
}

// eventsV1EventCells prints an events.k8s.io/v1 Event like the core Event it
// is stored as in Kubernetes (regarding -> involvedObject, note -> message,
// deprecated* -> source, first/last timestamps and count).
func eventsV1EventCells(c *cellContext, e *eventsv1.Event) []any {
	core := &corev1.Event{
		ObjectMeta:          e.ObjectMeta,
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		Related:             e.Related,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		core.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return coreEventCells(c, core)
}

// eventSource formats the SOURCE cell: "component, host", falling back to
// the reporting controller and instance, without the host when empty.
func eventSource(s corev1.EventSource, reportingController, reportingInstance string) string {
	component := s.Component
	if component == "" {
		component = reportingController
	}
	host := s.Host
	if host == "" {
		host = reportingInstance
	}
	if host == "" {
		return component
	}
	return component + ", " + host
}
