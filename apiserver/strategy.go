package apiserver

import (
	"reflect"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/podkit/podkit/apiserver/defaults"
	"github.com/podkit/podkit/internal/qos"
)

// The generic create/update strategy: what the server owns in an object's
// metadata, how status subresources isolate status from spec, and
// generation tracking. Per-type touches (a new pod's Pending phase, a new
// namespace's Active phase) live here too so every handler shares them.

// structField returns the addressable field name of obj's struct, if any.
// The field's index is looked up once per type: reflect's FieldByName
// searches (and allocates) through the embedded TypeMeta and ObjectMeta of
// every object without the field.
func (s *Server) structField(obj runtime.Object, name string) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	k := structFieldKey{t: v.Type(), name: name}
	idx, ok := s.fieldIndex.Load(k)
	if !ok {
		var index []int
		if sf, found := v.Elem().Type().FieldByName(name); found {
			index = sf.Index
		}
		idx, _ = s.fieldIndex.LoadOrStore(k, index)
	}
	index := idx.([]int)
	if index == nil {
		return reflect.Value{}, false
	}
	f := v.Elem().FieldByIndex(index)
	return f, f.IsValid() && f.CanSet()
}

// structFieldKey names a field of a Go struct type (by its pointer type).
type structFieldKey struct {
	t    reflect.Type
	name string
}

// prepareForCreate sets server-owned metadata and resets status for a new
// object of res.
func (s *Server) prepareForCreate(res *Resource, obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.NewTime(s.now().Truncate(time.Second)))
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetResourceVersion("")
	m.SetSelfLink("")
	if _, ok := s.structField(obj, "Spec"); ok {
		m.SetGeneration(1)
	} else {
		m.SetGeneration(0)
	}
	_, isNode := obj.(*corev1.Node)
	if res.HasSubresource("status") && !isNode {
		// Status is the controllers' to write. Nodes are the exception, as
		// in Kubernetes: a kubelet registers its node with its status.
		if f, ok := s.structField(obj, "Status"); ok {
			f.Set(reflect.Zero(f.Type()))
		}
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		mergeStringData(o)
	case *batchv1.Job:
		generateJobSelector(o)
	case *corev1.Pod:
		o.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qos.PodQOSClass(o)}
	case *corev1.Namespace:
		o.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
		setNamespaceNameLabel(o)
		defaults.NamespaceOnCreate(o)
	}
}

// prepareForUpdate carries server-owned fields from old to obj. On the main
// resource the status is kept from old when a status subresource exists; on
// the status subresource everything but status is kept from old.
//
// old may be the store's own object (storage.OwningWriter), shared with
// every reader: it is only read. What obj takes from it by reference (the
// main resource's status, a namespace's finalizers, the deletion
// timestamp) nothing modifies later; the status subresource starts from
// a shallow copy of old whose shared parts nothing modifies either (its
// own changes to the metadata replace whole fields).
func (s *Server) prepareForUpdate(res *Resource, sub string, obj, old runtime.Object) {
	m, err1 := meta.Accessor(obj)
	om, err2 := meta.Accessor(old)
	if err1 != nil || err2 != nil {
		return
	}
	if sub == "finalize" {
		if ns, ok := obj.(*corev1.Namespace); ok {
			rv, managed := ns.ResourceVersion, ns.ManagedFields
			finalizers := ns.Spec.Finalizers
			*ns = *old.(*corev1.Namespace).DeepCopy()
			ns.Spec.Finalizers = finalizers
			ns.ResourceVersion, ns.ManagedFields = rv, managed
		}
		return
	}
	if sub == "status" {
		st, ok := s.structField(obj, "Status")
		if ok {
			rv, managed := m.GetResourceVersion(), m.GetManagedFields()
			bt, hasBT := statusBirthTrace(obj, old)
			keep := reflect.ValueOf(st.Interface())
			// Copy on write: obj becomes a shallow copy of old, its own
			// top-level struct (so TypeMeta and ObjectMeta's scalar fields
			// are obj's) sharing every map, slice and pointer with old.
			// Nothing after this point changes those in place: the
			// resourceVersion and managedFields are set as whole fields
			// (here, by IgnoreTimestampOnlyChanges and by the store), the
			// birth trace replaces the annotations map, validation and
			// validating admission only read. Mutating admission ran on
			// the decoded object before: what it did outside status is
			// dropped here.
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(old).Elem())
			fs, _ := s.structField(obj, "Status")
			fs.Set(keep)
			m.SetResourceVersion(rv)
			m.SetManagedFields(managed)
			keepBirthTrace(obj, bt, hasBT)
		}
		return
	}
	m.SetUID(om.GetUID())
	m.SetCreationTimestamp(om.GetCreationTimestamp())
	m.SetDeletionTimestamp(om.GetDeletionTimestamp())
	m.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
	m.SetSelfLink("")
	m.SetGeneration(om.GetGeneration())
	if res.HasSubresource("status") {
		if f, ok := s.structField(obj, "Status"); ok {
			if of, ok := s.structField(old, "Status"); ok {
				f.Set(of)
			}
		}
	}
	if spec, ok := s.structField(obj, "Spec"); ok {
		if ospec, ok := s.structField(old, "Spec"); ok && !equality.Semantic.DeepEqual(spec.Interface(), ospec.Interface()) {
			m.SetGeneration(om.GetGeneration() + 1)
		}
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		mergeStringData(o)
	case *corev1.Service:
		// old may be the store's own object (storage.OwningWriter): the
		// cluster IPs and IP families carried over from it are appended to
		// by the allocator later, so they come from a copy.
		prepareServiceUpdate(o, old.(*corev1.Service).DeepCopy())
	}
	if ns, ok := obj.(*corev1.Namespace); ok {
		// Finalizers of a namespace change only through /finalize.
		ns.Spec.Finalizers = old.(*corev1.Namespace).Spec.Finalizers
		setNamespaceNameLabel(ns)
	}
}

// setNamespaceNameLabel keeps the immutable kubernetes.io/metadata.name
// label Kubernetes puts on every namespace.
func setNamespaceNameLabel(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

// mergeStringData folds a Secret's write-only stringData into data, as
// Kubernetes' secret strategy does.
func mergeStringData(s *corev1.Secret) {
	if len(s.StringData) == 0 {
		return
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

// generateJobSelector gives a Job without manualSelector the selector and
// labels Kubernetes' job strategy generates from its UID.
func generateJobSelector(job *batchv1.Job) {
	if job.Spec.ManualSelector != nil && *job.Spec.ManualSelector {
		return
	}
	uid := string(job.UID)
	if job.Spec.Template.Labels == nil {
		job.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range map[string]string{
		batchv1.ControllerUidLabel: uid, "controller-uid": uid,
		batchv1.JobNameLabel: job.Name, "job-name": job.Name,
	} {
		job.Spec.Template.Labels[k] = v
	}
	job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: uid}}
}
