package oci

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/podkit/podkit/sandbox/native"
)

// maxLogRead caps what is read of a runtime's JSON log.
const maxLogRead = 1 << 20

// maxMessage caps the message a CommandError carries.
const maxMessage = 4 << 10

// CommandError is a failed OCI runtime command.
type CommandError struct {
	// Runtime is the Runtime's name ("runc").
	Runtime string
	// Op is the subcommand ("start").
	Op string
	// ID is the container's ID.
	ID string
	// Err is how the command failed (an *exec.ExitError, a start error).
	Err error
	// Message is what the runtime logged at error level, else the tail of
	// its stderr.
	Message string
	// Hint tells how to cure a known cause, when there is one.
	Hint string
}

func (e *CommandError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s: %v", e.Runtime, e.Op, e.ID, e.Err)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, " (hint: %s)", e.Hint)
	}
	return b.String()
}

// Unwrap gives Err, and ErrNotExist or ErrHybridCgroups when the message
// says so.
func (e *CommandError) Unwrap() []error {
	errs := []error{e.Err}
	if isNotExist(e.Message) {
		errs = append(errs, ErrNotExist)
	}
	if strings.Contains(e.Message, crunHybridMessage) {
		errs = append(errs, ErrHybridCgroups)
	}
	return errs
}

// isNotExist recognises "no such container": runc says "container does
// not exist"; crun fails to open the container's status file.
func isNotExist(msg string) bool {
	return strings.Contains(msg, "does not exist") ||
		(strings.Contains(msg, "/status`") && strings.Contains(msg, "No such file or directory"))
}

// newCommandError builds the error of a failed command from its JSON log
// and, when the log says nothing, its stderr.
func (r *Runtime) newCommandError(op, id string, err error, logFile string, stderr []byte) *CommandError {
	msg := strings.Join(logErrors(logFile), "; ")
	if msg == "" {
		msg = strings.TrimSpace(string(stderr))
	}
	if len(msg) > maxMessage {
		msg = "…" + msg[len(msg)-maxMessage:]
	}
	e := &CommandError{Runtime: r.name, Op: op, ID: id, Err: err, Message: msg}
	if strings.Contains(msg, crunHybridMessage) {
		e.Hint = hybridHint(r.cgroups, nil)
	}
	return e
}

// logEntry is one line of a runtime's --log-format json log (runc and
// crun write the same keys).
type logEntry struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
}

// logErrors returns the distinct error-level messages of a JSON log, in
// order. Lines that are not JSON are skipped.
func logErrors(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(io.LimitReader(f, maxLogRead))
	sc.Buffer(make([]byte, 64<<10), maxLogRead)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		var e logEntry
		if len(line) == 0 || json.Unmarshal(line, &e) != nil {
			continue
		}
		switch e.Level {
		case "error", "fatal", "panic":
		default:
			continue
		}
		if m := strings.TrimSpace(e.Msg); m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// createLog is the JSON log of the create command of bundle b. It lives in
// the bundle, which the native runtime removes with the container.
func (r *Runtime) createLog(b *native.Bundle) string {
	return filepath.Join(b.Dir, r.name+"-create.log")
}

// CreateError explains a failed create of bundle b, whose error (from the
// supervisor, ending with the runtime's stderr) is err: it adds what the
// runtime logged and, for a known cause such as crun's refusal of hybrid
// cgroups, the hint and sentinel (ErrHybridCgroups). The native runtime
// can call it through an optional interface
// (interface{ CreateError(*native.Bundle, error) error }).
func (r *Runtime) CreateError(b *native.Bundle, err error) error {
	if err == nil {
		return nil
	}
	logged := logErrors(r.createLog(b))
	var extra []string
	for _, m := range logged {
		if !strings.Contains(err.Error(), m) {
			extra = append(extra, m)
		}
	}
	all := err.Error() + " " + strings.Join(logged, " ")
	switch {
	case strings.Contains(all, crunHybridMessage):
		return fmt.Errorf("%w%s: %w (hint: %s)", err, joinLogged(r.name, extra), ErrHybridCgroups, hybridHint(r.cgroups, nil))
	case len(extra) > 0:
		return fmt.Errorf("%w%s", err, joinLogged(r.name, extra))
	}
	return err
}

func joinLogged(name string, msgs []string) string {
	if len(msgs) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s logged: %s)", name, strings.Join(msgs, "; "))
}
