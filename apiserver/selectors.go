package apiserver

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

// objectFields is the selectable fields of an object, as Kubernetes'
// GetAttrs/ToSelectableFields expose them, read on demand: a watch
// predicate runs for every event and watcher, and a field selector names
// one or two fields, so the value of each is looked up rather than the
// whole set built into a map. It implements fields.Fields.
type objectFields struct {
	obj runtime.Object
	m   metav1.Object // nil when obj has no metadata
}

func selectableFields(obj runtime.Object) objectFields {
	m, err := meta.Accessor(obj)
	if err != nil {
		m = nil
	}
	return objectFields{obj: obj, m: m}
}

// Has implements fields.Fields.
func (f objectFields) Has(field string) bool {
	_, ok := f.lookup(field)
	return ok
}

// Get implements fields.Fields.
func (f objectFields) Get(field string) string {
	v, _ := f.lookup(field)
	return v
}

// lookup returns field's value and whether obj has the field.
func (f objectFields) lookup(field string) (string, bool) {
	switch field {
	case "metadata.name":
		if f.m == nil {
			return "", false
		}
		return f.m.GetName(), true
	case "metadata.namespace":
		if f.m == nil || f.m.GetNamespace() == "" {
			return "", false
		}
		return f.m.GetNamespace(), true
	}
	switch o := f.obj.(type) {
	case *corev1.Pod:
		return podField(o, field)
	case *corev1.Node:
		if field == "spec.unschedulable" {
			return strconv.FormatBool(o.Spec.Unschedulable), true
		}
	case *corev1.Namespace:
		if field == "status.phase" {
			return string(o.Status.Phase), true
		}
	case *corev1.Secret:
		if field == "type" {
			return string(o.Type), true
		}
	case *corev1.Service:
		switch field {
		case "spec.clusterIP":
			return o.Spec.ClusterIP, true
		case "spec.type":
			return string(o.Spec.Type), true
		}
	case *corev1.Event:
		return eventField(o, field)
	case *appsv1.ReplicaSet:
		if field == "status.replicas" {
			return strconv.Itoa(int(o.Status.Replicas)), true
		}
	case *batchv1.Job:
		if field == "status.successful" {
			return strconv.Itoa(int(o.Status.Succeeded)), true
		}
	}
	return "", false
}

func podField(o *corev1.Pod, field string) (string, bool) {
	switch field {
	case "spec.nodeName":
		return o.Spec.NodeName, true
	case "spec.restartPolicy":
		return string(o.Spec.RestartPolicy), true
	case "spec.schedulerName":
		return o.Spec.SchedulerName, true
	case "spec.serviceAccountName":
		return o.Spec.ServiceAccountName, true
	case "spec.hostNetwork":
		return strconv.FormatBool(o.Spec.HostNetwork), true
	case "status.phase":
		return string(o.Status.Phase), true
	case "status.podIP":
		return o.Status.PodIP, true
	case "status.nominatedNodeName":
		return o.Status.NominatedNodeName, true
	case "status.podIPs":
		ips := make([]string, 0, len(o.Status.PodIPs))
		for _, ip := range o.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), true
	}
	return "", false
}

func eventField(o *corev1.Event, field string) (string, bool) {
	switch field {
	case "involvedObject.kind":
		return o.InvolvedObject.Kind, true
	case "involvedObject.namespace":
		return o.InvolvedObject.Namespace, true
	case "involvedObject.name":
		return o.InvolvedObject.Name, true
	case "involvedObject.uid":
		return string(o.InvolvedObject.UID), true
	case "involvedObject.apiVersion":
		return o.InvolvedObject.APIVersion, true
	case "involvedObject.resourceVersion":
		return o.InvolvedObject.ResourceVersion, true
	case "involvedObject.fieldPath":
		return o.InvolvedObject.FieldPath, true
	case "reason":
		return o.Reason, true
	case "reportingComponent":
		return o.ReportingController, true
	case "source":
		return o.Source.Component, true
	case "type":
		return o.Type, true
	}
	return "", false
}

// selection is a parsed label and field selector.
type selection struct {
	labels labels.Selector
	fields fields.Selector
}

// parseSelection parses labelSelector and fieldSelector and checks that the
// fields are ones the resource supports.
func parseSelection(res *Resource, labelSel, fieldSel string) (*selection, error) {
	ls, err := labels.Parse(labelSel)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	fs, err := fields.ParseSelector(fieldSel)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector %q: %v", fieldSel, err))
	}
	for _, req := range fs.Requirements() {
		if req.Field == "metadata.name" || req.Field == "metadata.namespace" || contains(res.FieldLabels, req.Field) {
			continue
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
	}
	return &selection{labels: ls, fields: fs}, nil
}

// predicate returns the storage predicate, nil when everything matches.
func (sel *selection) predicate() storage.Predicate {
	if sel.labels.Empty() && sel.fields.Empty() {
		return nil
	}
	return func(obj runtime.Object) bool {
		m, err := meta.Accessor(obj)
		if err != nil {
			return false
		}
		if !sel.labels.Matches(labels.Set(m.GetLabels())) {
			return false
		}
		return sel.fields.Empty() || sel.fields.Matches(selectableFields(obj))
	}
}
