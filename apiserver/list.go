package apiserver

import (
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/storage"
)

// listPrefix is the storage prefix a list or watch request covers.
func listPrefix(res *Resource, info requestInfo) string {
	if res.Namespaced && info.Namespace != "" {
		return storage.Key(res.GroupResource(), info.Namespace, "")
	}
	return storage.Prefix(res.GroupResource())
}

// list serves GET of a collection with label and field selectors,
// limit/continue pagination and resourceVersion semantics.
func (s *Server) list(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error {
	t, err := s.negotiate(r, asTable, asPartialList)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	sel, err := parseSelection(res, q.Get("labelSelector"), q.Get("fieldSelector"))
	if err != nil {
		return err
	}
	// The list is only encoded, and typed lists hold copies of the items'
	// structs anyway: no need for the store to deep-copy every object.
	opts := storage.ListOptions{Predicate: sel.predicate(), Continue: q.Get("continue"), ReadOnly: true}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil || n < 0 {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid limit %q", l))
		}
		opts.Limit = n
	}
	if err := s.checkListResourceVersion(r, q.Get("resourceVersion"), q.Get("resourceVersionMatch"), opts.Continue != ""); err != nil {
		return err
	}
	result, err := s.storeFor(res).List(r.Context(), listPrefix(res, info), opts)
	if err != nil {
		return storageError(err, res.GroupResource(), "")
	}
	list := res.NewList()
	if err := setList(list, result.Items, result.ResourceVersion, result.Continue, result.RemainingItemCount); err != nil {
		return apierrors.NewInternalError(err)
	}
	return s.respond(w, r, http.StatusOK, t, res, list)
}

// checkListResourceVersion validates resourceVersion/resourceVersionMatch.
// Lists are always served from the latest state, which satisfies "", "0"
// and NotOlderThan; Exact of an older revision is answered with 410 Gone.
func (s *Server) checkListResourceVersion(r *http.Request, rv, match string, hasContinue bool) error {
	if match != "" && rv == "" {
		return apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
	}
	if hasContinue && rv != "" && rv != "0" {
		return apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	switch match {
	case "", string(metav1.ResourceVersionMatchNotOlderThan), string(metav1.ResourceVersionMatchExact):
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("resourceVersionMatch: Unsupported value: %q", match))
	}
	if rv == "" || rv == "0" {
		return nil
	}
	want, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	cur, err := s.store.CurrentRevision(r.Context())
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if want > cur {
		return tooLargeResourceVersion(fmt.Sprintf("Too large resource version: %d, current: %d", want, cur))
	}
	if match == string(metav1.ResourceVersionMatchExact) && want != cur {
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", want, cur))
	}
	return nil
}
