// Package storewatch keeps an in-memory view of one stored resource in
// step with the API server's own store: a full list, then a watch from the
// listed revision, relisting when the watch ends or falls too far behind.
// It is the API server's counterpart of client-go's informers for the
// state its own request path reads on every request: the RBAC and Node
// authorizers build their indexes on it, and the admission webhook plugins
// keep the webhook configurations on it instead of listing them on every
// write, the way kube-apiserver reads both from shared informers. Synced
// is the gate their decisions wait on until the first list has filled
// them.
package storewatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
)

// Handler receives the resource's state.
type Handler interface {
	// Replace is the full set of objects, after every (re)list.
	Replace(objs []runtime.Object)
	// Upsert is an object added or changed.
	Upsert(obj runtime.Object)
	// Delete is an object removed.
	Delete(obj runtime.Object)
}

// Source is the part of storage.Store a watch needs.
type Source interface {
	List(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.ListResult, error)
	Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (watch.Interface, error)
}

// Run lists and watches prefix until ctx is done, feeding h. synced is
// called after the first successful list. Errors are logged and retried
// after retry (a second when zero).
func Run(ctx context.Context, src Source, prefix string, h Handler, synced func(), log *slog.Logger, retry time.Duration) {
	if retry <= 0 {
		retry = time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	first := true
	for ctx.Err() == nil {
		err := runOnce(ctx, src, prefix, h, func() {
			if first && synced != nil {
				first = false
				synced()
			}
		})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log.Warn("watching the store", "prefix", prefix, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
	}
}

func runOnce(ctx context.Context, src Source, prefix string, h Handler, listed func()) error {
	objs, rv, err := listAll(ctx, src, prefix)
	if err != nil {
		return err
	}
	h.Replace(objs)
	listed()
	w, err := src.Watch(ctx, prefix, storage.WatchOptions{ResourceVersion: rv})
	if err != nil {
		return fmt.Errorf("watch %s: %w", prefix, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errors.New("watch closed")
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				h.Upsert(ev.Object)
			case watch.Deleted:
				h.Delete(ev.Object)
			case watch.Error:
				return fmt.Errorf("watch %s: error event %v", prefix, ev.Object)
			}
		}
	}
}

func listAll(ctx context.Context, src Source, prefix string) ([]runtime.Object, uint64, error) {
	var out []runtime.Object
	opts := storage.ListOptions{}
	var rv uint64
	for {
		res, err := src.List(ctx, prefix, opts)
		if err != nil {
			return nil, 0, fmt.Errorf("list %s: %w", prefix, err)
		}
		if rv == 0 {
			rv = res.ResourceVersion
		}
		out = append(out, res.Items...)
		if res.Continue == "" {
			return out, rv, nil
		}
		opts.Continue = res.Continue
	}
}
