package fieldmanager

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// UpdateOptions identify the writer of a create, update or non-apply patch.
type UpdateOptions struct {
	// FieldManager is the request's fieldManager parameter; when empty the
	// manager is derived from UserAgent (see ManagerName).
	FieldManager string
	// UserAgent is the request's User-Agent header.
	UserAgent string
	// Subresource is "" for the main resource, or "status", "finalize", ...
	Subresource string
}

// Update records an ordinary write in obj's managedFields, as
// kube-apiserver's UpdateNoErrors does for every create, update and
// non-apply patch: the fields the write changed (relative to live) become
// owned by the manager with operation Update. live is nil for a create.
// obj is modified in place and returned.
//
// A client may set managedFields itself on the main resource: a valid,
// non-empty list replaces the tracked one, and an empty list (or one empty
// entry) resets tracking; through a subresource the request's list is
// ignored. If tracking fails (it should not), obj keeps live's
// managedFields and the failure is logged, so the write still succeeds.
// The only error is ErrUnknownKind, for a kind without schema: obj is then
// returned untouched and the caller may go on without tracking.
func (m *Manager) Update(ctx context.Context, live, obj runtime.Object, gvk schema.GroupVersionKind, opts UpdateOptions) (runtime.Object, error) {
	if err := ctx.Err(); err != nil {
		return obj, err
	}
	fm, err := m.fieldManager(gvk, opts.Subresource)
	if err != nil {
		return obj, err
	}
	manager := ManagerName(opts.FieldManager, opts.UserAgent)
	if live == nil && opts.Subresource == "" && !m.slowCreate &&
		m.fastPath(ctx, gvk, func() bool { return m.createFields(obj, gvk, manager) }) {
		return obj, nil
	}
	if live != nil && !m.slowUpdate &&
		m.fastPath(ctx, gvk, func() bool { return m.updateFields(live, obj, gvk, manager, opts.Subresource) }) {
		return obj, nil
	}
	if live == nil {
		if live, err = m.scheme.New(gvk); err != nil {
			return obj, fmt.Errorf("fieldmanager: new %v: %w", gvk, err)
		}
	}
	before := append(managedFieldsOf(live), managedFieldsOf(obj)...)
	start := time.Now()
	out, err := fm.Update(live, obj, manager)
	end := time.Now()
	if err != nil {
		m.keepLive(ctx, live, obj, gvk, err)
		return obj, nil
	}
	m.stamp(out, before, start, end)
	return out, nil
}

// keepLive gives obj live's managedFields after a tracking failure.
func (m *Manager) keepLive(ctx context.Context, live, obj runtime.Object, gvk schema.GroupVersionKind, err error) {
	oa, aerr := meta.Accessor(obj)
	if aerr != nil {
		return
	}
	oa.SetManagedFields(managedFieldsOf(live))
	m.log.WarnContext(ctx, "fieldmanager: managedFields not updated, kept the stored ones",
		"kind", gvk.String(), "namespace", oa.GetNamespace(), "name", oa.GetName(), "err", err)
}

// fastPath runs record, a fast path, and reports whether it recorded the
// write. Should it panic on a value nobody foresaw, the write is left to
// the library (record changes obj only once it cannot fail) and the
// failure logged.
func (m *Manager) fastPath(ctx context.Context, gvk schema.GroupVersionKind, record func() bool) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			m.log.ErrorContext(ctx, "fieldmanager: fast path failed, the library records the write", "kind", gvk.String(), "panic", r)
			ok = false
		}
	}()
	return record()
}
