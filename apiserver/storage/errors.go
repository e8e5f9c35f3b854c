package storage

import (
	"errors"
	"fmt"
)

// Sentinel errors added to the contract of interface.go. They refine it and
// change none of its meanings.
var (
	// ErrContinueExpired: a well-formed continue token whose list snapshot
	// is no longer kept. It wraps ErrInvalidContinue, so errors.Is with
	// either sentinel matches; Kubernetes answers it with 410 Gone, reason
	// Expired, where a malformed token is a 400.
	ErrContinueExpired = fmt.Errorf("%w: the list snapshot it continues has expired", ErrInvalidContinue)
	// ErrTooLargeResourceVersion: a watch asked to start after a revision
	// the store has not reached yet (Kubernetes: 504, cause
	// ResourceVersionTooLarge, "Too large resource version").
	ErrTooLargeResourceVersion = errors.New("too large resource version")
	// ErrInvalidObject: an object that cannot be stored as given: no object
	// metadata, an unparsable resourceVersion, a resourceVersion set on
	// Create, or a nil object returned by tryUpdate.
	ErrInvalidObject = errors.New("invalid object")
)
