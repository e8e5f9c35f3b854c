package index

import (
	"fmt"
	"strings"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

// View is an immutable snapshot of a Tree at one revision.
type View struct {
	bt  *btree.BTreeG[*Item]
	rev uint64
}

// Rev is the revision the view reflects.
func (v *View) Rev() uint64 { return v.rev }

// Get returns the item under key in the snapshot.
func (v *View) Get(key string) (*Item, bool) { return v.bt.Get(&Item{Key: key}) }

// List returns a page of the objects under prefix, deep-copied, starting at
// key start ("" for the first page), as storage.Store.List documents.
// Limit counts objects that pass the predicate; the continue token resumes
// after the last object returned and is issued only when another object
// passing the predicate follows. RemainingItemCount is set on pages that
// have a continue token when there is no predicate.
func (v *View) List(prefix, start string, opts storage.ListOptions) (*storage.ListResult, error) {
	if start < prefix {
		start = prefix
	}
	return list(func(fn func(*Item) bool) { v.bt.AscendGreaterOrEqual(&Item{Key: start}, fn) }, v.rev, prefix, opts)
}

// list is View.List over ascend, which calls fn on the items from the
// first page's start on, in key order, until fn returns false.
func list(ascend func(fn func(*Item) bool), rev uint64, prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	res := &storage.ListResult{Items: []runtime.Object{}, ResourceVersion: rev}
	var (
		lastKey   string
		more      bool
		remaining int64
	)
	limit := opts.Limit
	ascend(func(it *Item) bool {
		if !strings.HasPrefix(it.Key, prefix) {
			return false
		}
		if opts.Predicate != nil && !opts.Predicate(it.Obj) {
			return true
		}
		if limit > 0 && int64(len(res.Items)) >= limit {
			more = true
			if opts.Predicate != nil {
				return false // the remaining count is only known unfiltered
			}
			remaining++
			return true
		}
		if opts.ReadOnly {
			res.Items = append(res.Items, it.Obj)
		} else {
			res.Items = append(res.Items, it.Obj.DeepCopyObject())
		}
		lastKey = it.Key
		return true
	})
	if !more {
		return res, nil
	}
	token, err := storage.EncodeContinue(prefix, lastKey+"\x00", rev)
	if err != nil {
		return nil, fmt.Errorf("listing %q: %w", prefix, err)
	}
	res.Continue = token
	if opts.Predicate == nil {
		res.RemainingItemCount = &remaining
	}
	return res, nil
}
