package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
)

// The wire protocol: a stream of JSON frames in each direction over the
// unix socket (encoding/json encoders and decoders delimit the values).
// A client sends requests {id, method, params} and cancellations {id,
// cancel}; the supervisor answers each request with one frame {id, result
// | error}, except Events, whose answer is a stream of frames with more set
// that ends when the client cancels it or disconnects. Requests run
// concurrently; answers come in any order.
//
// Why not net/rpc with jsonrpc: it cannot cancel a call on the server
// (a Wait abandoned by its caller would block a server goroutine until the
// task exits), cannot stream, and carries errors as bare strings; the
// client would lose errors.Is. The protocol here is ~100 lines per side.
type frame struct {
	ID     uint64          `json:"id"`
	Method string          `json:"method,omitempty"`
	Cancel bool            `json:"cancel,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
	More   bool            `json:"more,omitempty"`
}

// protocolVersion changes with any incompatible change of the frames or
// the method parameters.
const protocolVersion = 1

// Methods.
const (
	mHello  = "Hello"
	mCreate = "CreateTask"
	mSignal = "Signal"
	mState  = "State"
	mList   = "List"
	mDelete = "Delete"
	mWait   = "Wait"
	mEvents = "Events"
)

type helloParams struct {
	Version int `json:"version"`
}

type helloResult struct {
	Version int `json:"version"`
	Pid     int `json:"pid"`
}

type idParams struct {
	ID string `json:"id"`
}

type signalParams struct {
	ID     string `json:"id"`
	Signal int    `json:"signal"`
}

type deleteParams struct {
	ID    string `json:"id"`
	Force bool   `json:"force,omitempty"`
}

// wireError carries an error and the sentinel it wraps.
type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

var codes = []struct {
	code string
	err  error
}{
	{"not_found", ErrNotFound},
	{"already_exists", ErrAlreadyExists},
	{"invalid", ErrInvalid},
	{"running", ErrRunning},
	{"exited", ErrExited},
	{"canceled", context.Canceled},
	{"deadline", context.DeadlineExceeded},
	{"esrch", syscall.ESRCH},
	{"eperm", syscall.EPERM},
}

// toWire encodes err with the code of the first sentinel it wraps.
func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Code: "error", Message: err.Error()}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			w.Code = c.code
			break
		}
	}
	return w
}

// remoteError is an error from the supervisor; it unwraps to the sentinel
// of its code.
type remoteError struct {
	msg      string
	sentinel error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

func (w *wireError) err() error {
	e := &remoteError{msg: w.Message}
	for _, c := range codes {
		if c.code == w.Code {
			e.sentinel = c.err
		}
	}
	return e
}
