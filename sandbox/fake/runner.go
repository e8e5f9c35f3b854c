package fake

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/podkit/podkit/sandbox"
)

// Runner is the in-memory runner. Its methods are safe for concurrent use.
type Runner struct {
	s *state
}

var (
	_ sandbox.SandboxRunner = (*Runner)(nil)
	_ sandbox.Execer        = (*Runner)(nil)
	_ sandbox.EventSource   = (*Runner)(nil)
)

// firstPID is the first synthetic PID handed out.
const firstPID = 1000

// state is what every Runner returned by New and Reopen shares.
type state struct {
	clock  Clock
	script Script
	log    *slog.Logger
	// handlers are the runtime handlers accepted besides "".
	handlers map[string]bool
	idSeed   string
	record   bool

	mu         sync.Mutex
	seq        uint64
	nextPID    int
	sandboxes  map[string]*sandboxRec
	containers map[string]*containerRec
	// pods maps a pod's reservation key to its sandbox's ID.
	pods  map[string]string
	ipam  *ipam
	calls []Call
	fail  map[string][]error
	subs  map[*subscriber]struct{}
}

// New returns an empty runner.
func New(opts ...Option) (*Runner, error) {
	o := options{
		clock:    clock.RealClock{},
		script:   Interpret,
		podCIDR:  DefaultPodCIDR,
		handlers: map[string]bool{},
		logger:   slog.New(slog.DiscardHandler),
		record:   true,
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.idSeed == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		o.idSeed = hex.EncodeToString(b[:])
	}
	pool, err := newIPAM(o.podCIDR)
	if err != nil {
		return nil, err
	}
	return &Runner{s: &state{
		clock: o.clock, script: o.script, log: o.logger, handlers: o.handlers,
		idSeed: o.idSeed, record: o.record,
		nextPID:    firstPID,
		sandboxes:  map[string]*sandboxRec{},
		containers: map[string]*containerRec{},
		pods:       map[string]string{},
		ipam:       pool,
		fail:       map[string][]error{},
		subs:       map[*subscriber]struct{}{},
	}}, nil
}

// Reopen returns a second runner over the same sandboxes and containers,
// as a kubelet restarted on the node finds them: running containers keep
// running and their exits are reported to both. The fake has no process to
// close, so the receiver keeps working too.
func (r *Runner) Reopen() *Runner { return &Runner{s: r.s} }

// Call is one call made to the runner.
type Call struct {
	// Op is the method's name, e.g. "StartContainer".
	Op string
	// ID is the sandbox or container the call was about: the argument, or
	// for RunPodSandbox and CreateContainer the new ID ("" when it
	// failed); empty for List and Events.
	ID string
	// Time is when the call began, by the runner's clock.
	Time time.Time
	// Err is what the call returned.
	Err error
}

// Operations FailNext accepts: the methods of the runner's interfaces.
var ops = map[string]bool{
	"RunPodSandbox": true, "StopPodSandbox": true, "RemovePodSandbox": true,
	"CreateContainer": true, "StartContainer": true, "StopContainer": true,
	"RemoveContainer": true, "ContainerStatus": true, "List": true,
	"ExecSync": true, "Events": true,
}

// FailNext makes the next call of op (a method name, e.g.
// "CreateContainer") fail with err before it changes anything; errors.Is
// sees err in what it returns. Calls queue: FailNext twice fails the next
// two calls. It panics on an op that is not a method of the runner's
// interfaces, so a misspelt name cannot go unnoticed.
func (r *Runner) FailNext(op string, err error) {
	if !ops[op] {
		panic(fmt.Sprintf("fake: FailNext: unknown operation %q", op))
	}
	if err == nil {
		panic("fake: FailNext: nil error")
	}
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.s.fail[op] = append(r.s.fail[op], err)
}

// Calls returns the calls made so far, in the order they returned.
func (r *Runner) Calls() []Call {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return slices.Clone(r.s.calls)
}

// injectedLocked pops the failure queued for op, if any.
func (s *state) injectedLocked(op string) error {
	q := s.fail[op]
	if len(q) == 0 {
		return nil
	}
	err := q[0]
	if len(q) == 1 {
		delete(s.fail, op)
	} else {
		s.fail[op] = q[1:]
	}
	return fmt.Errorf("fake: injected %s failure: %w", op, err)
}

// recordLocked appends a call to the log.
func (s *state) recordLocked(op, id string, at time.Time, err error) {
	if s.record {
		s.calls = append(s.calls, Call{Op: op, ID: id, Time: at, Err: err})
	}
}

// newIDLocked returns a 64-hex-digit ID, unique within the runner.
func (s *state) newIDLocked(kind string) (string, uint64) {
	s.seq++
	sum := sha256.Sum256([]byte(s.idSeed + "/" + kind + "/" + strconv.FormatUint(s.seq, 10)))
	return hex.EncodeToString(sum[:]), s.seq
}

// newPIDLocked returns a synthetic PID.
func (s *state) newPIDLocked() int {
	p := s.nextPID
	s.nextPID++
	return p
}

// stopTimers stops timers collected under the lock. It must run without
// the lock: stopping a FakeClock timer takes the clock's lock, which the
// clock holds while it runs our callbacks, which take ours.
func stopTimers(ts []clock.Timer) {
	for _, t := range ts {
		t.Stop()
	}
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	return maps.Clone(m)
}
