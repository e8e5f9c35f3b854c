package printers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/scheme"
)

// TableConvertor converts an object, or a list of objects, into a Table.
// It mirrors the ConvertToTable half of Kubernetes' rest.TableConvertor with
// typed options.
type TableConvertor interface {
	ConvertToTable(ctx context.Context, obj runtime.Object, opts *metav1.TableOptions) (*metav1.Table, error)
}

var _ TableConvertor = (*Printer)(nil)

var (
	// ErrUnrecognizedIncludeObject reports a TableOptions.IncludeObject value
	// other than None, Metadata, Object or empty. Kubernetes answers it with
	// 400 Bad Request and the message `unrecognized includeObject value: "x"`,
	// which is exactly this error's text.
	ErrUnrecognizedIncludeObject = errors.New("unrecognized includeObject value")
	// ErrNotConvertible reports an object that cannot become a table row
	// because it has no object metadata. Kubernetes answers it with
	// 406 Not Acceptable ("the resource X does not support being converted
	// to a Table").
	ErrNotConvertible = errors.New("does not support being converted to a Table")
	// ErrInvalidOption reports an Option given an unusable value.
	ErrInvalidOption = errors.New("invalid printer option")
)

// partialObjectMetadataKind is the kind set on row objects for
// IncludeObject=Metadata (and the default). It is a value, never mutated.
var partialObjectMetadataKind = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata")

type options struct {
	now   func() time.Time
	typer runtime.ObjectTyper
}

// Option configures a Printer.
type Option func(*options) error

// WithClock sets the clock AGE, LAST SEEN, DURATION and restart times are
// measured against. The default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return fmt.Errorf("%w: nil clock", ErrInvalidOption)
		}
		o.now = now
		return nil
	}
}

// WithTyper sets what tells the group, version and kind of an object, used to
// fill the TypeMeta of full objects in rows (IncludeObject=Object) when the
// object does not carry one. The default is a podkit scheme (scheme.New).
func WithTyper(typer runtime.ObjectTyper) Option {
	return func(o *options) error {
		if typer == nil {
			return fmt.Errorf("%w: nil typer", ErrInvalidOption)
		}
		o.typer = typer
		return nil
	}
}

// Printer converts API objects into Tables with the columns Kubernetes uses.
// It is safe for concurrent use.
type Printer struct {
	now      func() time.Time
	typer    runtime.ObjectTyper
	handlers map[reflect.Type]*handler
	fallback *handler
}

// New returns a Printer that knows the built-in Kubernetes kinds.
func New(opts ...Option) (*Printer, error) {
	o := options{now: time.Now}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.typer == nil {
		o.typer = scheme.New()
	}
	p := &Printer{
		now:      o.now,
		typer:    o.typer,
		handlers: builtinHandlers(),
		fallback: defaultHandler(),
	}
	return p, nil
}

// ConvertToTable converts obj, a single object or a list (any type with an
// Items field, such as *corev1.PodList), into a Table. Rows always carry the
// wide cells; column definitions are omitted when opts.NoHeaders is set.
// Row objects follow opts.IncludeObject. A nil opts means the defaults.
// The Table's own TypeMeta is left empty for the encoder to set.
func (p *Printer) ConvertToTable(ctx context.Context, obj runtime.Object, opts *metav1.TableOptions) (*metav1.Table, error) {
	if obj == nil {
		return nil, fmt.Errorf("printers: nil object: %w", ErrNotConvertible)
	}
	if opts == nil {
		opts = &metav1.TableOptions{}
	}
	switch opts.IncludeObject {
	case metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject, "":
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnrecognizedIncludeObject, opts.IncludeObject)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("printers: %w", err)
	}

	h := p.handlerFor(obj)
	items := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, fmt.Errorf("printers: extracting items of %T: %w", obj, err)
		}
	}

	c := &cellContext{now: p.now()}
	table := &metav1.Table{Rows: make([]metav1.TableRow, 0, len(items))}
	for i, item := range items {
		if i%512 == 511 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("printers: %w", err)
			}
		}
		cells, conditions, err := h.row(c, item)
		if err != nil {
			return nil, err
		}
		rowObj, err := p.rowObject(item, opts.IncludeObject)
		if err != nil {
			return nil, err
		}
		table.Rows = append(table.Rows, metav1.TableRow{Cells: cells, Conditions: conditions, Object: rowObj})
	}

	if l, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = l.GetResourceVersion()
		table.Continue = l.GetContinue()
		table.RemainingItemCount = l.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	if !opts.NoHeaders {
		table.ColumnDefinitions = slices.Clone(h.columns)
	}
	return table, nil
}

// ColumnDefinitions returns every column (wide ones included, Priority 1) of
// the table obj converts to; for a list, the columns of its items.
func (p *Printer) ColumnDefinitions(obj runtime.Object) []metav1.TableColumnDefinition {
	return slices.Clone(p.handlerFor(obj).columns)
}

// Handles reports whether obj (or, for a list, its items) has a dedicated
// table layout rather than the default NAME / CREATED AT table.
func (p *Printer) Handles(obj runtime.Object) bool {
	return p.handlerFor(obj) != p.fallback
}

// handlerFor finds the handler of obj's type or, for a list, of its items.
func (p *Printer) handlerFor(obj runtime.Object) *handler {
	if obj == nil {
		return p.fallback
	}
	t := reflect.TypeOf(obj)
	if h, ok := p.handlers[t]; ok {
		return h
	}
	if it := listItemType(t); it != nil {
		if h, ok := p.handlers[it]; ok {
			return h
		}
	}
	return p.fallback
}

// listItemType returns the pointer type of the items of a list type
// (*corev1.PodList -> *corev1.Pod), or nil when t is not such a list.
func listItemType(t reflect.Type) reflect.Type {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	f, ok := t.Elem().FieldByName("Items")
	if !ok || f.Type.Kind() != reflect.Slice {
		return nil
	}
	switch e := f.Type.Elem(); e.Kind() {
	case reflect.Struct:
		return reflect.PointerTo(e)
	case reflect.Pointer:
		return e
	}
	return nil
}

// rowObject builds the object a row carries for the IncludeObject policy.
func (p *Printer) rowObject(item runtime.Object, include metav1.IncludeObjectPolicy) (runtime.RawExtension, error) {
	switch include {
	case metav1.IncludeNone:
		return runtime.RawExtension{}, nil
	case metav1.IncludeObject:
		gvk, err := p.kindOf(item)
		if err != nil {
			return runtime.RawExtension{}, err
		}
		out := item.DeepCopyObject()
		out.GetObjectKind().SetGroupVersionKind(gvk)
		return runtime.RawExtension{Object: out}, nil
	default: // metav1.IncludeMetadata and "", validated by the caller
		m, err := meta.Accessor(item)
		if err != nil {
			return runtime.RawExtension{}, fmt.Errorf("printers: %T has no object metadata: %w", item, ErrNotConvertible)
		}
		partial := meta.AsPartialObjectMetadata(m)
		partial.SetGroupVersionKind(partialObjectMetadataKind)
		return runtime.RawExtension{Object: partial}, nil
	}
}

// kindOf returns the object's own kind if it carries one, else the first kind
// the typer knows for its Go type.
func (p *Printer) kindOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" && gvk.Version != "" {
		return gvk, nil
	}
	gvks, _, err := p.typer.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("printers: kind of %T: %w", obj, err)
	}
	return gvks[0], nil
}
