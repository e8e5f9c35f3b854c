package fieldmanager

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/yaml"
)

// ApplyOptions are the PatchOptions of a server-side apply.
type ApplyOptions struct {
	// FieldManager names the applier; required.
	FieldManager string
	// Force takes ownership of conflicting fields instead of failing.
	Force bool
	// Subresource is "" for the main resource or "status".
	Subresource string
	// FieldValidation is Strict, Warn (the default when empty) or Ignore.
	// Unknown fields always fail the apply (the schema rejects them);
	// this directive governs duplicate fields in the patch.
	FieldValidation string
}

// Apply performs a server-side apply of patch (an apply configuration in
// YAML or JSON, which must name gvk's apiVersion and kind) onto live as
// opts.FieldManager and returns the merged object with metadata.managedFields
// updated, plus the warnings to send (duplicate fields under the default
// fieldValidation=Warn). live is nil when the object does not exist yet:
// the result is then a new object to create. live is never modified.
//
// The result is defaulted like a decoded request body and has an empty
// TypeMeta, like every object inside the server. It carries live's
// resourceVersion unless the patch sets one (optimistic concurrency), and
// the name, namespace and uid the patch sets: the caller checks them
// against the URL as for any patch.
//
// Errors are API status errors matching a sentinel: ErrInvalidOptions (422,
// missing or bad fieldManager), ErrBadPatch (400: undecodable YAML, wrong
// apiVersion or kind, managedFields set, duplicate fields under Strict),
// ErrConflict (409, `Apply failed with 1 conflict: conflict with "kubectl"
// ...: .spec.replicas`, one cause per field), ErrMerge (500 with the merge
// library's message, e.g. `.spec.foo: field not declared in schema`), and
// ErrUnknownKind for a kind without schema.
func (m *Manager) Apply(ctx context.Context, live runtime.Object, gvk schema.GroupVersionKind, patch []byte, opts ApplyOptions) (runtime.Object, []string, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	fm, err := m.fieldManager(gvk, opts.Subresource)
	if err != nil {
		return nil, nil, err
	}
	if live == nil {
		if live, err = m.scheme.New(gvk); err != nil {
			return nil, nil, fmt.Errorf("fieldmanager: new %v: %w", gvk, err)
		}
	}
	before := managedFieldsOf(live)
	start := time.Now()
	out, warnings, err := m.apply(fm, live, patch, opts)
	if err != nil {
		return nil, nil, err
	}
	m.stamp(out, before, start, time.Now())
	return out, warnings, nil
}

// apply validates the options, decodes the patch, merges it into live with
// fm and checks the patch for duplicate fields.
func (m *Manager) apply(fm *managedfields.FieldManager, live runtime.Object, patch []byte, opts ApplyOptions) (runtime.Object, []string, error) {
	po := &metav1.PatchOptions{FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation}
	if err := invalid(patchOptionsKind, metav1validation.ValidatePatchOptions(po, types.ApplyYAMLPatchType)); err != nil {
		return nil, nil, err
	}
	applied := &unstructured.Unstructured{Object: map[string]interface{}{}}
	if err := yaml.Unmarshal(patch, &applied.Object); err != nil {
		return nil, nil, withSentinel(ErrBadPatch, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err)))
	}
	out, err := fm.Apply(live, applied, opts.FieldManager, opts.Force)
	if err != nil {
		return nil, nil, classify(err)
	}
	var warnings []string
	if opts.FieldValidation != metav1.FieldValidationIgnore {
		if err := yaml.UnmarshalStrict(patch, &map[string]interface{}{}); err != nil {
			if opts.FieldValidation == metav1.FieldValidationStrict {
				return nil, nil, withSentinel(ErrBadPatch, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", err)))
			}
			warnings = yamlWarnings(err.Error())
		}
	}
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return out, warnings, nil
}

// The two ways a strict YAML decoding error begins.
const (
	yamlErrShort = "yaml: unmarshal errors:\n"
	yamlErrLong  = "error converting YAML to JSON: " + yamlErrShort
)

// yamlWarnings splits a strict YAML decoding error into one warning per
// offending line, as kube-apiserver does.
func yamlWarnings(msg string) []string {
	rest, ok := strings.CutPrefix(msg, yamlErrShort)
	if !ok {
		if rest, ok = strings.CutPrefix(msg, yamlErrLong); !ok {
			return []string{msg}
		}
	}
	var out []string
	for _, line := range strings.Split(rest, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// managedFieldsOf returns obj's managedFields, or nil.
func managedFieldsOf(obj runtime.Object) []metav1.ManagedFieldsEntry {
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return a.GetManagedFields()
}
