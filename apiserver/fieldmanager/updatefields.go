package fieldmanager

import (
	"bytes"
	"cmp"
	"reflect"
	"slices"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// The update fast path. An ordinary update (PUT, non-apply PATCH, a status
// write) goes through apimachinery's stack of managers: it decodes every
// managedFields entry, converts live and new to typed values (validating
// both, live's managedFields included), reconciles each entry with the
// schema, compares the two objects, takes the changed and removed fields
// (minus what the subresource resets) from every other manager, gives
// the changed ones to the writer's Update entry, stamps that entry if it
// gained anything, caps the number of Update entries, and encodes every
// entry again. For the common case updateFields does the same in one walk
// over both Go values (walk.go), with the entries' sets decoded once per
// distinct JSON (setcache.go), and writes the entries the library would
// write, in its order, byte for byte. It covers a typed object whose
// entries all have the request's apiVersion, carry sets the library would
// write back as they are, and name each manager once; the request's own
// managedFields must be absent or the live ones (a main-resource write
// that replaces them takes the library's path; one that resets them, like
// a write to an object without entries, leaves it untracked, as the
// library does). More than ten Update entries afterwards, an invalid
// value, anything unusual takes the library's path too.

// maxUpdateManagers is the library's cap on Update entries
// (DefaultMaxUpdateManagers): beyond it, it merges the oldest ones.
const maxUpdateManagers = 10

// trackedEntry is a managedFields entry an update starts from, with its
// field set (never modified).
type trackedEntry struct {
	e   *metav1.ManagedFieldsEntry
	set *fieldpath.Set
}

// updateFields records the update of live to obj by manager through
// subresource as Update(live, obj) would through the library, and reports
// whether it did; when it did not, obj is untouched.
func (m *Manager) updateFields(live, obj runtime.Object, gvk schema.GroupVersionKind, manager, subresource string) bool {
	p := m.plan(gvk, subresource)
	if !p.ok || reflect.TypeOf(obj) != p.typ || reflect.TypeOf(live) != p.typ ||
		!utf8.ValidString(manager) || !utf8.ValidString(subresource) {
		return false
	}
	la, err := meta.Accessor(live)
	if err != nil {
		return false
	}
	oa, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	src, ok := sourceEntries(la.GetManagedFields(), oa.GetManagedFields(), subresource)
	switch {
	case !ok || (len(src) == 0 && la.GetUID() == ""):
		return false
	case len(src) == 0:
		// An object without entries is tracked from its next apply on.
		oa.SetManagedFields(nil)
		return true
	}
	tracked, ok := p.track(src)
	if !ok {
		return false
	}
	changed, removed, err := p.updateSets(live, obj)
	if err != nil {
		return false
	}
	if manager == "" {
		manager = "unknown"
	}
	self := metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: p.gv, Subresource: subresource}
	out, stamped, ok := p.entries(tracked, changed, removed, &self)
	if !ok {
		return false
	}
	if stamped != nil {
		stamped.Time = &metav1.Time{Time: m.now().UTC().Truncate(time.Second)}
	}
	oa.SetManagedFields(out)
	return true
}

// sourceEntries returns the entries the library starts an update from:
// live's, unless a main-resource write brings its own (then only when they
// are live's), none when the write resets them.
func sourceEntries(live, req []metav1.ManagedFieldsEntry, subresource string) ([]metav1.ManagedFieldsEntry, bool) {
	switch {
	case subresource != "" || req == nil:
		return live, true
	case len(req) == 0 || (len(req) == 1 && reflect.DeepEqual(req[0], metav1.ManagedFieldsEntry{})):
		return nil, true
	case sameEntries(req, live):
		return req, true
	}
	return nil, false
}

// sameEntries reports whether a and b hold the same entries.
func sameEntries(a, b []metav1.ManagedFieldsEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Manager != y.Manager || x.Operation != y.Operation || x.APIVersion != y.APIVersion ||
			x.FieldsType != y.FieldsType || x.Subresource != y.Subresource ||
			(x.Time == nil) != (y.Time == nil) || (x.Time != nil && !x.Time.Equal(y.Time)) ||
			(x.FieldsV1 == nil) != (y.FieldsV1 == nil) || (x.FieldsV1 != nil && !bytes.Equal(x.FieldsV1.Raw, y.FieldsV1.Raw)) {
			return false
		}
	}
	return true
}

// track decodes entries as DecodeManagedFields does, or reports false
// when one is outside the fast path.
func (p *kindPlan) track(entries []metav1.ManagedFieldsEntry) ([]trackedEntry, bool) {
	out := make([]trackedEntry, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		if (e.Operation != metav1.ManagedFieldsOperationUpdate && e.Operation != metav1.ManagedFieldsOperationApply) ||
			e.APIVersion != p.gv || e.FieldsType != "FieldsV1" || !utf8.ValidString(e.Manager) || !utf8.ValidString(e.Subresource) {
			return nil, false
		}
		for _, t := range out {
			if sameManager(t.e, e) {
				return nil, false // the library keeps the last of them
			}
		}
		set := &fieldpath.Set{}
		if e.FieldsV1 != nil {
			var ok bool
			if set, ok = p.stableSet(e.FieldsV1.Raw); !ok {
				return nil, false
			}
		}
		out = append(out, trackedEntry{e: e, set: set})
	}
	return out, true
}

// sameManager reports whether two entries of one apiVersion have the
// library's same manager identifier.
func sameManager(a, b *metav1.ManagedFieldsEntry) bool {
	return a.Manager == b.Manager && a.Operation == b.Operation && a.Subresource == b.Subresource
}

// updateSets returns the fields obj changes (adds or modifies) and
// removes relative to live, minus the reset ones.
func (p *kindPlan) updateSets(live, obj runtime.Object) (changed, removed *fieldpath.Set, err error) {
	w := newWalker(p.fields, p.reset, true)
	lhs, err := wrap(reflect.ValueOf(live), nil)
	if err != nil {
		return nil, nil, err
	}
	rhs, err := wrap(reflect.ValueOf(obj), nil)
	if err != nil {
		return nil, nil, err
	}
	if err := w.compare(p.root, some(lhs), some(rhs)); err != nil {
		return nil, nil, err
	}
	return w.changed.set, w.removed.set, nil
}

// entries computes the managedFields after an update by self (an Update
// entry) that changed and removed those fields: every entry loses them,
// self gains the changed ones (but the identity metadata) and, if it
// gained any, is the entry to stamp; empty entries go. The result is in
// the library's order. It reports false beyond the cap of Update entries.
func (p *kindPlan) entries(tracked []trackedEntry, changed, removed *fieldpath.Set, self *metav1.ManagedFieldsEntry) ([]metav1.ManagedFieldsEntry, *metav1.ManagedFieldsEntry, bool) {
	out := make([]metav1.ManagedFieldsEntry, 0, len(tracked)+1)
	var own *trackedEntry
	for i := range tracked {
		t := &tracked[i]
		if sameManager(t.e, self) {
			own = t
			continue
		}
		set := t.set
		if intersects(set, changed) || intersects(set, removed) {
			set = set.Difference(changed).Difference(removed)
		}
		if !set.Empty() {
			e, ok := p.entry(t.e, t.e.Time, set, t)
			if !ok {
				return nil, nil, false
			}
			out = append(out, e)
		}
	}
	gained := changed.Difference(stripFields)
	var wall *metav1.Time
	switch {
	case !gained.Empty():
		// The library times the entry with the wall clock and sorts by it;
		// the Manager's clock stamps it afterwards (see stamp).
		wall = &metav1.Time{Time: time.Now().UTC()}
		e, ok := p.entry(self, wall, selfSet(own, gained, changed, removed), own)
		if !ok {
			return nil, nil, false
		}
		out = append(out, e)
	case own != nil:
		if set := selfSet(own, gained, changed, removed); !set.Empty() {
			e, ok := p.entry(own.e, own.e.Time, set, own)
			if !ok {
				return nil, nil, false
			}
			out = append(out, e)
		}
	}
	updates := 0
	for i := range out {
		if out[i].Operation == metav1.ManagedFieldsOperationUpdate {
			updates++
		}
	}
	if updates > maxUpdateManagers {
		return nil, nil, false
	}
	if len(out) == 0 {
		return nil, nil, true
	}
	slices.SortFunc(out, compareEntries)
	for i := range out {
		if wall != nil && out[i].Time == wall {
			return out, &out[i], true
		}
	}
	return out, nil, true
}

// entry encodes the entry of e's manager with set and time t; from is the
// tracked entry it started from, if any, whose JSON is reused when set is
// its set.
func (p *kindPlan) entry(e *metav1.ManagedFieldsEntry, t *metav1.Time, set *fieldpath.Set, from *trackedEntry) (metav1.ManagedFieldsEntry, bool) {
	var raw []byte
	if from != nil && from.e.FieldsV1 != nil && set == from.set {
		raw = bytes.Clone(from.e.FieldsV1.Raw)
	} else {
		var err error
		if raw, err = p.encode(set); err != nil {
			return metav1.ManagedFieldsEntry{}, false
		}
	}
	return metav1.ManagedFieldsEntry{
		Manager:     e.Manager,
		Operation:   e.Operation,
		APIVersion:  p.gv,
		Time:        t,
		FieldsType:  "FieldsV1",
		FieldsV1:    &metav1.FieldsV1{Raw: raw},
		Subresource: e.Subresource,
	}, true
}

// selfSet returns the writer's set after the write: its own (if it had an
// entry) minus the changed and removed fields, plus the gained ones.
func selfSet(own *trackedEntry, gained, changed, removed *fieldpath.Set) *fieldpath.Set {
	if own == nil {
		return gained
	}
	old := own.set
	if subset(gained, old) && !intersects(old, removed) && !intersects(old, stripFields) {
		// It keeps what it had (the changed fields it owned are the
		// gained ones): the same set, whose JSON entry reuses.
		return old
	}
	if intersects(old, changed) || intersects(old, removed) {
		old = old.Difference(changed).Difference(removed)
	}
	if gained.Empty() {
		return old
	}
	return gained.Union(old)
}

// compareEntries orders entries as the library's encoding does: Apply
// before Update, then by time (in seconds), manager, apiVersion and
// subresource.
func compareEntries(p, q metav1.ManagedFieldsEntry) int {
	if p.Operation != q.Operation {
		return cmp.Compare(p.Operation, q.Operation)
	}
	var ps, qs int64
	if p.Time != nil {
		ps = p.Time.Unix()
	}
	if q.Time != nil {
		qs = q.Time.Unix()
	}
	switch {
	case ps != qs:
		return cmp.Compare(ps, qs)
	case p.Manager != q.Manager:
		return cmp.Compare(p.Manager, q.Manager)
	case p.APIVersion != q.APIVersion:
		return cmp.Compare(p.APIVersion, q.APIVersion)
	}
	return cmp.Compare(p.Subresource, q.Subresource)
}

// subset reports whether every member path of a is one of b.
func subset(a, b *fieldpath.Set) bool {
	ok := true
	a.Members.Iterate(func(pe fieldpath.PathElement) {
		ok = ok && b.Members.Has(pe)
	})
	a.Children.Iterate(func(pe fieldpath.PathElement) {
		if !ok {
			return
		}
		ac, _ := a.Children.Get(pe)
		if bc, found := b.Children.Get(pe); found {
			ok = subset(ac, bc)
		} else {
			ok = ac.Empty()
		}
	})
	return ok
}

// intersects reports whether a and b have a member path in common: then,
// and only then, a.Difference(b) differs from a.
func intersects(a, b *fieldpath.Set) bool {
	found := false
	b.Members.Iterate(func(pe fieldpath.PathElement) {
		found = found || a.Members.Has(pe)
	})
	if found {
		return true
	}
	b.Children.Iterate(func(pe fieldpath.PathElement) {
		if found {
			return
		}
		if ac, ok := a.Children.Get(pe); ok {
			bc, _ := b.Children.Get(pe)
			found = intersects(ac, bc)
		}
	})
	return found
}
