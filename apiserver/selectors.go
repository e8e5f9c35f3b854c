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
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

// fieldSet returns the selectable fields of obj, as Kubernetes'
// GetAttrs/ToSelectableFields expose them.
func fieldSet(obj runtime.Object) fields.Set {
	set := fields.Set{}
	if m, err := meta.Accessor(obj); err == nil {
		set["metadata.name"] = m.GetName()
		if m.GetNamespace() != "" {
			set["metadata.namespace"] = m.GetNamespace()
		}
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		set["spec.nodeName"] = o.Spec.NodeName
		set["spec.restartPolicy"] = string(o.Spec.RestartPolicy)
		set["spec.schedulerName"] = o.Spec.SchedulerName
		set["spec.serviceAccountName"] = o.Spec.ServiceAccountName
		set["spec.hostNetwork"] = strconv.FormatBool(o.Spec.HostNetwork)
		set["status.phase"] = string(o.Status.Phase)
		set["status.podIP"] = o.Status.PodIP
		set["status.nominatedNodeName"] = o.Status.NominatedNodeName
		ips := make([]string, 0, len(o.Status.PodIPs))
		for _, ip := range o.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		set["status.podIPs"] = strings.Join(ips, ",")
	case *corev1.Node:
		set["spec.unschedulable"] = strconv.FormatBool(o.Spec.Unschedulable)
	case *corev1.Namespace:
		set["status.phase"] = string(o.Status.Phase)
	case *corev1.Secret:
		set["type"] = string(o.Type)
	case *corev1.Service:
		set["spec.clusterIP"] = o.Spec.ClusterIP
		set["spec.type"] = string(o.Spec.Type)
	case *corev1.Event:
		set["involvedObject.kind"] = o.InvolvedObject.Kind
		set["involvedObject.namespace"] = o.InvolvedObject.Namespace
		set["involvedObject.name"] = o.InvolvedObject.Name
		set["involvedObject.uid"] = string(o.InvolvedObject.UID)
		set["involvedObject.apiVersion"] = o.InvolvedObject.APIVersion
		set["involvedObject.resourceVersion"] = o.InvolvedObject.ResourceVersion
		set["involvedObject.fieldPath"] = o.InvolvedObject.FieldPath
		set["reason"] = o.Reason
		set["reportingComponent"] = o.ReportingController
		set["source"] = o.Source.Component
		set["type"] = o.Type
	case *appsv1.ReplicaSet:
		set["status.replicas"] = strconv.Itoa(int(o.Status.Replicas))
	case *batchv1.Job:
		set["status.successful"] = strconv.Itoa(int(o.Status.Succeeded))
	}
	return set
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
		return sel.fields.Empty() || sel.fields.Matches(fieldSet(obj))
	}
}
