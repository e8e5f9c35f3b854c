package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

// initialEventsEnd annotates the bookmark that ends the initial events of a
// sendInitialEvents watch (client-go's WatchList).
const initialEventsEnd = "k8s.io/initial-events-end"

// watchParams are the parsed query parameters of a watch.
type watchParams struct {
	sel         *selection
	rv          string
	sendInitial bool
	bookmarks   bool
	timeout     time.Duration
}

func (s *Server) parseWatch(r *http.Request, res *Resource) (*watchParams, error) {
	q := r.URL.Query()
	sel, err := parseSelection(res, q.Get("labelSelector"), q.Get("fieldSelector"))
	if err != nil {
		return nil, err
	}
	p := &watchParams{sel: sel, rv: q.Get("resourceVersion"), bookmarks: q.Get("allowWatchBookmarks") == "true"}
	if v := q.Get("sendInitialEvents"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid sendInitialEvents %q", v))
		}
		p.sendInitial = b
	}
	match := q.Get("resourceVersionMatch")
	if q.Has("sendInitialEvents") && match != string(metav1.ResourceVersionMatchNotOlderThan) {
		return nil, apierrors.NewBadRequest("sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")
	}
	if !q.Has("sendInitialEvents") && match != "" {
		return nil, apierrors.NewBadRequest("resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
	}
	if p.sendInitial && !p.bookmarks {
		return nil, apierrors.NewBadRequest("sendInitialEvents requires allowWatchBookmarks=true")
	}
	p.timeout = s.cfg.MinRequestTimeout + time.Duration(rand.Int64N(int64(s.cfg.MinRequestTimeout)))
	if ts := q.Get("timeoutSeconds"); ts != "" {
		n, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || n < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds %q", ts))
		}
		if n > 0 {
			p.timeout = time.Duration(n) * time.Second
		}
	}
	return p, nil
}

// watch serves ?watch=1: a stream of WatchEvents, framed for the negotiated
// media type, from a resourceVersion (or from a synthetic list of the
// current state), with bookmarks and sendInitialEvents.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error {
	t, err := s.negotiate(r, asTable, asPartial)
	if err != nil {
		return err
	}
	if t.info.StreamSerializer == nil {
		return newStatusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			fmt.Sprintf("no stream serialization for %s", t.info.MediaType), "")
	}
	p, err := s.parseWatch(r, res)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()

	prefix := listPrefix(res, info)
	pred := p.sel.predicate()
	var initial []runtime.Object
	var from uint64
	var watchErr error
	if p.sendInitial || p.rv == "" || p.rv == "0" {
		result, err := s.storeFor(res).List(ctx, prefix, storage.ListOptions{Predicate: pred})
		if err != nil {
			return storageError(err, res.GroupResource(), "")
		}
		initial, from = result.Items, result.ResourceVersion
	} else if from, err = strconv.ParseUint(p.rv, 10, 64); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", p.rv))
	}
	sw, err := s.storeFor(res).Watch(ctx, prefix, storage.WatchOptions{ResourceVersion: from, Predicate: pred, Bookmarks: p.bookmarks, NewFunc: res.New,
		Index: watchIndex(res, p.sel)})
	if err != nil {
		// Like kube-apiserver, a watch that cannot start from the requested
		// revision answers 200 with a single ERROR event (410 Expired).
		watchErr = storageError(err, res.GroupResource(), "")
	} else {
		defer sw.Stop()
	}

	ct := t.contentType()
	if t.info.MediaType == runtime.ContentTypeProtobuf {
		ct += ";stream=watch"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()

	gvk := res.GroupVersionKind()
	gauge := s.metrics.watchers.WithLabelValues(gvk.Group, gvk.Version, gvk.Kind)
	gauge.Inc()
	defer gauge.Dec()
	events := s.metrics.watchEvts.WithLabelValues(gvk.Group, gvk.Version, gvk.Kind)

	enc := streaming.NewEncoder(t.info.StreamSerializer.Framer.NewFrameWriter(w), t.info.StreamSerializer.Serializer)
	written := 0 // events written since the last flush
	flush := func() error {
		if written == 0 {
			return nil
		}
		events.Add(float64(written))
		written = 0
		return rc.Flush()
	}
	// send encodes an event of its own (initial, bookmark, error or
	// transformed) into the stream; flush sends it.
	send := func(typ watch.EventType, obj runtime.Object) error {
		out, gv := obj, res.GroupVersion
		if st, ok := obj.(*metav1.Status); ok {
			gv = schema.GroupVersion{Version: "v1"}
			out = st
		} else if t.as != "" {
			var err error
			if out, gv, err = s.transform(ctx, r, t, res, obj); err != nil {
				return err
			}
		}
		var buf bytes.Buffer
		if err := s.encoderFor(t.info.Serializer, out, gv).Encode(out, &buf); err != nil {
			return err
		}
		if err := enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: buf.Bytes()}}); err != nil {
			return err
		}
		written++
		return nil
	}
	// writeEvent writes a live event. Plain events carry objects shared
	// with every other watcher: they are encoded and framed once for all
	// watchers of the media type and written as is.
	writeEvent := func(ev watch.Event) error {
		switch {
		case ev.Type == watch.Bookmark && !p.bookmarks:
			return nil
		case ev.Type == watch.Bookmark || ev.Type == watch.Error:
			return send(ev.Type, ev.Object)
		case t.as != "":
			return send(ev.Type, ev.Object.DeepCopyObject())
		}
		frame, err := s.encodeEvent(t, ev.Type, ev.Object, res.GroupVersion)
		if err != nil {
			return err
		}
		if _, err := w.Write(frame); err != nil {
			return err
		}
		written++
		return nil
	}

	if watchErr != nil {
		if err := send(watch.Error, toStatus(watchErr)); err != nil {
			return s.streamEnded(err)
		}
		return s.streamEnded(flush())
	}
	for _, obj := range initial {
		if err := send(watch.Added, obj); err != nil {
			return s.streamEnded(err)
		}
	}
	if p.sendInitial {
		bm := res.New()
		if m, err := meta.Accessor(bm); err == nil {
			m.SetResourceVersion(strconv.FormatUint(from, 10))
			m.SetAnnotations(map[string]string{initialEventsEnd: "true"})
		}
		if err := send(watch.Bookmark, bm); err != nil {
			return s.streamEnded(err)
		}
	}
	if err := flush(); err != nil {
		return s.streamEnded(err)
	}
	// Live events come in batches of those ready (at most
	// maxUnflushedEvents): all written, then one flush, i.e. one write to
	// the connection, for the lot.
	next := nextFromChan(ctx, sw)
	if b, ok := sw.(watchcache.Batcher); ok {
		// Straight from the watch cache's buffer: no goroutine between the
		// cache and this handler.
		next = func(buf []watch.Event) ([]watch.Event, bool) { return b.NextBatch(buf, maxUnflushedEvents) }
	}
	var batch []watch.Event
	for {
		var ok bool
		batch, ok = next(batch[:0])
		for i := range batch {
			if err := writeEvent(batch[i]); err != nil {
				return s.streamEnded(err)
			}
			batch[i] = watch.Event{} // let the object go
		}
		if err := flush(); err != nil {
			return s.streamEnded(err)
		}
		if !ok {
			return nil
		}
	}
}

// nextFromChan reads a batch of events from a watch's result channel: it
// waits for one, then takes those already waiting, up to
// maxUnflushedEvents. ok is false once the watch or ctx has ended.
func nextFromChan(ctx context.Context, sw watch.Interface) func(buf []watch.Event) ([]watch.Event, bool) {
	return func(buf []watch.Event) ([]watch.Event, bool) {
		select {
		case <-ctx.Done():
			return buf, false
		case ev, ok := <-sw.ResultChan():
			if !ok {
				return buf, false
			}
			buf = append(buf, ev)
		}
		for len(buf) < maxUnflushedEvents {
			select {
			case ev, ok := <-sw.ResultChan():
				if !ok {
					return buf, false
				}
				buf = append(buf, ev)
			default:
				return buf, true
			}
		}
		return buf, true
	}
}

// watchIndex returns the watch cache index a selection allows: a pod watch
// requiring spec.nodeName to equal a value (each kubelet's) is indexed by
// node, so a pod's change visits only the watchers of its node instead of
// running every kubelet's predicate.
func watchIndex(res *Resource, sel *selection) *storage.WatchIndex {
	if res.GroupResource() != (schema.GroupResource{Resource: "pods"}) {
		return nil
	}
	node, ok := sel.fields.RequiresExactMatch("spec.nodeName")
	if !ok {
		return nil
	}
	return &storage.WatchIndex{Name: "pods:spec.nodeName", Func: podNodeName, Value: node}
}

// podNodeName is the pods:spec.nodeName index.
func podNodeName(obj runtime.Object) string {
	if p, ok := obj.(*corev1.Pod); ok {
		return p.Spec.NodeName
	}
	return ""
}

// maxUnflushedEvents caps the events a watch writes before flushing.
const maxUnflushedEvents = 64

// streamEnded logs why a started watch stream ended early and returns nil:
// the status line is already out, and a gone client is no error to report.
func (s *Server) streamEnded(err error) error {
	if err != nil {
		s.log.Debug("watch stream ended", "err", err)
	}
	return nil
}
