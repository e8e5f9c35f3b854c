package rbac

import (
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// index holds the RBAC objects by name and the bindings by the subjects
// they name, so a decision reads only the bindings of the caller's user
// name and groups.
type index struct {
	mu           sync.RWMutex
	clusterRoles map[string]*rbacv1.ClusterRole
	roles        map[string]*rbacv1.Role // namespace/name
	crbs         map[string]*rbacv1.ClusterRoleBinding
	rbs          map[string]*rbacv1.RoleBinding // namespace/name
	// crbBySubject: subject key → binding name → binding.
	crbBySubject map[string]map[string]*rbacv1.ClusterRoleBinding
	// rbBySubject: namespace → subject key → binding name → binding.
	rbBySubject map[string]map[string]map[string]*rbacv1.RoleBinding
	// changed is signalled when a ClusterRole changes (aggregation).
	changed chan struct{}
}

func newIndex() *index {
	return &index{
		clusterRoles: map[string]*rbacv1.ClusterRole{},
		roles:        map[string]*rbacv1.Role{},
		crbs:         map[string]*rbacv1.ClusterRoleBinding{},
		rbs:          map[string]*rbacv1.RoleBinding{},
		crbBySubject: map[string]map[string]*rbacv1.ClusterRoleBinding{},
		rbBySubject:  map[string]map[string]map[string]*rbacv1.RoleBinding{},
		changed:      make(chan struct{}, 1),
	}
}

func (ix *index) signal() {
	select {
	case ix.changed <- struct{}{}:
	default:
	}
}

// clusterRoleHandler feeds ClusterRoles into the index.
type clusterRoleHandler struct{ ix *index }

func (h clusterRoleHandler) Replace(objs []runtime.Object) {
	h.ix.mu.Lock()
	h.ix.clusterRoles = map[string]*rbacv1.ClusterRole{}
	for _, o := range objs {
		if r, ok := o.(*rbacv1.ClusterRole); ok {
			h.ix.clusterRoles[r.Name] = r
		}
	}
	h.ix.mu.Unlock()
	h.ix.signal()
}

func (h clusterRoleHandler) Upsert(o runtime.Object) {
	if r, ok := o.(*rbacv1.ClusterRole); ok {
		h.ix.mu.Lock()
		h.ix.clusterRoles[r.Name] = r
		h.ix.mu.Unlock()
		h.ix.signal()
	}
}

func (h clusterRoleHandler) Delete(o runtime.Object) {
	if r, ok := o.(*rbacv1.ClusterRole); ok {
		h.ix.mu.Lock()
		delete(h.ix.clusterRoles, r.Name)
		h.ix.mu.Unlock()
		h.ix.signal()
	}
}

// roleHandler feeds Roles into the index.
type roleHandler struct{ ix *index }

func (h roleHandler) Replace(objs []runtime.Object) {
	h.ix.mu.Lock()
	defer h.ix.mu.Unlock()
	h.ix.roles = map[string]*rbacv1.Role{}
	for _, o := range objs {
		if r, ok := o.(*rbacv1.Role); ok {
			h.ix.roles[r.Namespace+"/"+r.Name] = r
		}
	}
}

func (h roleHandler) Upsert(o runtime.Object) {
	if r, ok := o.(*rbacv1.Role); ok {
		h.ix.mu.Lock()
		h.ix.roles[r.Namespace+"/"+r.Name] = r
		h.ix.mu.Unlock()
	}
}

func (h roleHandler) Delete(o runtime.Object) {
	if r, ok := o.(*rbacv1.Role); ok {
		h.ix.mu.Lock()
		delete(h.ix.roles, r.Namespace+"/"+r.Name)
		h.ix.mu.Unlock()
	}
}

// clusterRoleBindingHandler feeds ClusterRoleBindings into the index.
type clusterRoleBindingHandler struct{ ix *index }

func (h clusterRoleBindingHandler) Replace(objs []runtime.Object) {
	h.ix.mu.Lock()
	defer h.ix.mu.Unlock()
	h.ix.crbs = map[string]*rbacv1.ClusterRoleBinding{}
	h.ix.crbBySubject = map[string]map[string]*rbacv1.ClusterRoleBinding{}
	for _, o := range objs {
		if b, ok := o.(*rbacv1.ClusterRoleBinding); ok {
			h.ix.addCRB(b)
		}
	}
}

func (h clusterRoleBindingHandler) Upsert(o runtime.Object) {
	if b, ok := o.(*rbacv1.ClusterRoleBinding); ok {
		h.ix.mu.Lock()
		h.ix.removeCRB(b.Name)
		h.ix.addCRB(b)
		h.ix.mu.Unlock()
	}
}

func (h clusterRoleBindingHandler) Delete(o runtime.Object) {
	if b, ok := o.(*rbacv1.ClusterRoleBinding); ok {
		h.ix.mu.Lock()
		h.ix.removeCRB(b.Name)
		h.ix.mu.Unlock()
	}
}

func (ix *index) addCRB(b *rbacv1.ClusterRoleBinding) {
	ix.crbs[b.Name] = b
	for i := range b.Subjects {
		k, ok := subjectKey(&b.Subjects[i], "")
		if !ok {
			continue
		}
		m := ix.crbBySubject[k]
		if m == nil {
			m = map[string]*rbacv1.ClusterRoleBinding{}
			ix.crbBySubject[k] = m
		}
		m[b.Name] = b
	}
}

func (ix *index) removeCRB(name string) {
	old, ok := ix.crbs[name]
	if !ok {
		return
	}
	delete(ix.crbs, name)
	for i := range old.Subjects {
		if k, ok := subjectKey(&old.Subjects[i], ""); ok {
			delete(ix.crbBySubject[k], name)
			if len(ix.crbBySubject[k]) == 0 {
				delete(ix.crbBySubject, k)
			}
		}
	}
}

// roleBindingHandler feeds RoleBindings into the index.
type roleBindingHandler struct{ ix *index }

func (h roleBindingHandler) Replace(objs []runtime.Object) {
	h.ix.mu.Lock()
	defer h.ix.mu.Unlock()
	h.ix.rbs = map[string]*rbacv1.RoleBinding{}
	h.ix.rbBySubject = map[string]map[string]map[string]*rbacv1.RoleBinding{}
	for _, o := range objs {
		if b, ok := o.(*rbacv1.RoleBinding); ok {
			h.ix.addRB(b)
		}
	}
}

func (h roleBindingHandler) Upsert(o runtime.Object) {
	if b, ok := o.(*rbacv1.RoleBinding); ok {
		h.ix.mu.Lock()
		h.ix.removeRB(b.Namespace, b.Name)
		h.ix.addRB(b)
		h.ix.mu.Unlock()
	}
}

func (h roleBindingHandler) Delete(o runtime.Object) {
	if b, ok := o.(*rbacv1.RoleBinding); ok {
		h.ix.mu.Lock()
		h.ix.removeRB(b.Namespace, b.Name)
		h.ix.mu.Unlock()
	}
}

func (ix *index) addRB(b *rbacv1.RoleBinding) {
	ix.rbs[b.Namespace+"/"+b.Name] = b
	byKey := ix.rbBySubject[b.Namespace]
	if byKey == nil {
		byKey = map[string]map[string]*rbacv1.RoleBinding{}
		ix.rbBySubject[b.Namespace] = byKey
	}
	for i := range b.Subjects {
		k, ok := subjectKey(&b.Subjects[i], b.Namespace)
		if !ok {
			continue
		}
		m := byKey[k]
		if m == nil {
			m = map[string]*rbacv1.RoleBinding{}
			byKey[k] = m
		}
		m[b.Name] = b
	}
}

func (ix *index) removeRB(namespace, name string) {
	old, ok := ix.rbs[namespace+"/"+name]
	if !ok {
		return
	}
	delete(ix.rbs, namespace+"/"+name)
	byKey := ix.rbBySubject[namespace]
	for i := range old.Subjects {
		if k, ok := subjectKey(&old.Subjects[i], namespace); ok {
			delete(byKey[k], name)
			if len(byKey[k]) == 0 {
				delete(byKey, k)
			}
		}
	}
	if len(byKey) == 0 {
		delete(ix.rbBySubject, namespace)
	}
}
