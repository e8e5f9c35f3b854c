package fake

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/sandbox"
)

// Behavior is how a container's entrypoint behaves. The zero Behavior runs
// silently until it is stopped, dies of the stop signal and is always
// ready.
type Behavior struct {
	// Stdout and Stderr are lines the entrypoint writes as it starts.
	Stdout, Stderr []string
	// RunFor is how long the entrypoint runs before it exits by itself
	// with ExitCode. Zero: it runs until stopped, unless Exits is set.
	RunFor time.Duration
	// Exits makes the entrypoint exit by itself after RunFor even when
	// RunFor is zero, that is at once (`exit 3`, `print hi`).
	Exits bool
	// ExitCode is the status of an entrypoint that exits by itself.
	ExitCode int32
	// OOM makes the entrypoint be killed for using too much memory after
	// RunFor (at once when zero): exit code 137, reason OOMKilled.
	OOM bool
	// IgnoreTerm makes the entrypoint ignore the stop signal, so
	// StopContainer kills it once the grace period is over (137).
	IgnoreTerm bool
	// ExitOnTerm makes the entrypoint handle the stop signal by exiting
	// with TermExitCode. Otherwise the stop signal kills it (128+signal).
	ExitOnTerm   bool
	TermExitCode int32
	// StartError makes StartContainer fail with it; the container ends
	// Exited with exit code 128 and reason StartError.
	StartError error
	// ExecResults are what ExecSync returns, keyed by the command joined
	// with spaces (strings.Join(cmd, " ")).
	ExecResults map[string]sandbox.ExecResult
	// Ready says whether the container is ready after running for the
	// given time (nil: ready while it runs). It answers Runner.Ready and
	// the ExecSync of commands the fake does not know. It is called
	// without the runner's lock.
	Ready func(running time.Duration) bool
}

// ReadyAfter returns a Behavior.Ready that turns ready after d.
func ReadyAfter(d time.Duration) func(time.Duration) bool {
	return func(running time.Duration) bool { return running >= d }
}

// Script decides how a container behaves; it is called once, at
// CreateContainer.
type Script func(sandboxCfg *sandbox.SandboxConfig, cfg *sandbox.ContainerConfig) Behavior

// ReasonStartError is the reason of a container whose entrypoint could not
// be started (as containerd reports it, with exit code 128).
const ReasonStartError = sandbox.ReasonStartError

// exitStartError is the exit code of a container that failed to start.
const exitStartError = 128

// MergedCommand is the command a container runs, merged as Kubernetes
// does: Command+Args when Command is set, else the image's Entrypoint+Args
// when Args are set, else Entrypoint+Cmd.
func MergedCommand(cfg *sandbox.ContainerConfig) []string {
	var out []string
	switch {
	case len(cfg.Command) > 0:
		out = append(append(out, cfg.Command...), cfg.Args...)
	case len(cfg.Args) > 0:
		out = append(append(out, cfg.ImageConfig.Entrypoint...), cfg.Args...)
	default:
		out = append(append(out, cfg.ImageConfig.Entrypoint...), cfg.ImageConfig.Cmd...)
	}
	return out
}

// Interpret is the default Script: it reads the merged command as the
// testbox vocabulary (see the package doc), with or without a leading
// `testbox` (any path). Commands it cannot imitate in memory run until
// stopped.
func Interpret(sandboxCfg *sandbox.SandboxConfig, cfg *sandbox.ContainerConfig) Behavior {
	argv := MergedCommand(cfg)
	words, testbox := testboxWords(argv)
	if len(words) == 0 {
		if testbox {
			return Behavior{Stderr: []string{"usage: testbox <command> [args...]"}, Exits: true, ExitCode: 2}
		}
		return Behavior{}
	}
	if out, ok := oneShot(sandboxCfg, cfg, words); ok {
		return Behavior{Stdout: out.stdout, Stderr: out.stderr, Exits: true, ExitCode: out.code}
	}
	sigterm := stopSignal(cfg) == int(unix.SIGTERM)
	args := words[1:]
	switch words[0] {
	case "sleep":
		s := argAt(args, 0, "inf")
		if s == "inf" || s == "infinity" {
			return Behavior{}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return Behavior{Stderr: []string{fmt.Sprintf("testbox: bad duration %q", s)}, Exits: true, ExitCode: 2}
		}
		f = max(f, 0) // a negative sleep returns at once
		return Behavior{RunFor: time.Duration(f * float64(time.Second)), Exits: true}
	case "term-exit":
		// testbox parses the code once SIGTERM came (a bad one gives 2).
		code, _ := atoi(argAt(args, 0, "0"))
		b := Behavior{Stdout: []string{"waiting for SIGTERM"}}
		// testbox handles SIGTERM only; another stop signal kills it.
		if sigterm {
			b.ExitOnTerm, b.TermExitCode = true, exitStatus(code)
		}
		return b
	case "ignore-term":
		return Behavior{Stdout: []string{"ignoring SIGTERM"}, IgnoreTerm: sigterm}
	case "alloc":
		mib, complaint := atoi(argAt(args, 0, "0"))
		if limit := memoryLimit(cfg); limit > 0 && mib<<20 > limit {
			return Behavior{Stderr: complaint, OOM: true}
		}
		return Behavior{Stdout: []string{fmt.Sprintf("allocated %d MiB", mib)}, Stderr: complaint}
	}
	return Behavior{}
}

// testboxWords strips a leading testbox program from argv.
func testboxWords(argv []string) (words []string, testbox bool) {
	if len(argv) > 0 && path.Base(argv[0]) == "testbox" {
		return argv[1:], true
	}
	return argv, false
}

type output struct {
	stdout, stderr []string
	code           int32
}

// oneShot runs the testbox commands that print and exit at once, for
// entrypoints and ExecSync alike.
func oneShot(sandboxCfg *sandbox.SandboxConfig, cfg *sandbox.ContainerConfig, words []string) (output, bool) {
	args := words[1:]
	switch words[0] {
	case "exit":
		code, complaint := atoi(argAt(args, 0, "0"))
		return output{stderr: complaint, code: exitStatus(code)}, true
	case "print":
		return output{stdout: []string{strings.Join(args, " ")}}, true
	case "eprint":
		return output{stderr: []string{strings.Join(args, " ")}}, true
	case "hostname":
		return output{stdout: []string{hostname(sandboxCfg)}}, true
	case "env":
		return output{stdout: mergedEnv(cfg)}, true
	case "pwd":
		return output{stdout: []string{workingDir(cfg)}}, true
	}
	return output{}, false
}

func argAt(args []string, i int, def string) string {
	if i < len(args) {
		return args[i]
	}
	return def
}

// atoi parses a number as testbox does: a bad one reads as 2, with a
// complaint on stderr.
func atoi(s string) (int64, []string) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 2, []string{fmt.Sprintf("testbox: bad number %q", s)}
	}
	return n, nil
}

// exitStatus is what a parent sees of exit(n): its low byte.
func exitStatus(n int64) int32 { return int32(uint8(n)) }

func hostname(sb *sandbox.SandboxConfig) string {
	if sb == nil {
		return ""
	}
	if sb.Hostname != "" {
		return sb.Hostname
	}
	return sb.Pod.Name
}

// mergedEnv is the image's environment overridden by the container's.
func mergedEnv(cfg *sandbox.ContainerConfig) []string {
	var out []string
	idx := map[string]int{}
	for _, list := range [][]string{cfg.ImageConfig.Env, cfg.Env} {
		for _, kv := range list {
			name, _, _ := strings.Cut(kv, "=")
			if i, ok := idx[name]; ok {
				out[i] = kv
				continue
			}
			idx[name] = len(out)
			out = append(out, kv)
		}
	}
	return out
}

func workingDir(cfg *sandbox.ContainerConfig) string {
	switch {
	case cfg.WorkingDir != "":
		return cfg.WorkingDir
	case cfg.ImageConfig.WorkingDir != "":
		return cfg.ImageConfig.WorkingDir
	}
	return "/"
}

func memoryLimit(cfg *sandbox.ContainerConfig) int64 {
	if cfg.Resources == nil || cfg.Resources.Memory == nil || cfg.Resources.Memory.Limit == nil {
		return 0
	}
	return *cfg.Resources.Memory.Limit
}

// stopSignal is the container's stop signal number, SIGTERM when unset or
// unparsable (CreateContainer rejects the latter with parseSignal).
func stopSignal(cfg *sandbox.ContainerConfig) int {
	sig, err := parseSignal(cfg.ImageConfig.StopSignal)
	if err != nil {
		return int(unix.SIGTERM)
	}
	return sig
}

// parseSignal reads a signal by name ("SIGQUIT", "QUIT") or number.
func parseSignal(s string) (int, error) {
	if s == "" {
		return int(unix.SIGTERM), nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n > 64 {
			return 0, fmt.Errorf("signal %d out of range", n)
		}
		return n, nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return int(sig), nil
	}
	return 0, fmt.Errorf("unknown signal %q", s)
}
