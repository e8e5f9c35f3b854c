package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/podkit/podkit/sandbox/native"
)

// DefaultRoot is the parent of the OCI runtimes' state directories: a
// Runtime named N keeps its state (its --root) in DefaultRoot/N unless
// WithRoot says otherwise. It belongs on a tmpfs, like /run/runc.
const DefaultRoot = "/run/podkit/oci"

// DefaultWaitDelay is how long Exec waits, after its context ended and it
// killed the exec'd process, for the runtime to exit and the output pipes
// to close before it kills the runtime too.
const DefaultWaitDelay = 5 * time.Second

// versionTimeout bounds `<binary> --version` in New.
const versionTimeout = 30 * time.Second

var (
	// ErrNotInstalled: the OCI runtime binary is not there.
	ErrNotInstalled = errors.New("OCI runtime not installed")
	// ErrInvalid: a bad option.
	ErrInvalid = errors.New("invalid OCI runtime option")
	// ErrNotExist: the OCI runtime has no container of that ID.
	ErrNotExist = errors.New("container does not exist in the OCI runtime")
	// ErrHybridCgroups: crun cannot run on this hybrid cgroup node until
	// the cgroup2 hierarchy has no controllers (see the package doc).
	ErrHybridCgroups = errors.New("crun refuses hybrid cgroups with controllers enabled in cgroup2")
)

// Flavor is the OCI runtime a binary turned out to be.
type Flavor string

// Known flavors; Other runtimes get the command lines runc gets.
const (
	FlavorRunc  Flavor = "runc"
	FlavorCrun  Flavor = "crun"
	FlavorOther Flavor = "other"
)

// Runtime is a native.Handler that runs containers with an OCI runtime
// binary. It holds no state of its own besides its options: every Runtime
// over the same Root sees the same containers, so a restarted kubelet
// simply makes a new one. It is safe for concurrent use.
type Runtime struct {
	name    string
	binary  string
	flavor  Flavor
	version string
	root    string
	tmp     string
	extra   []string
	log     *slog.Logger
	delay   time.Duration
	cgroups string
}

var _ native.Handler = (*Runtime)(nil)

type options struct {
	root   string
	name   string
	tmp    string
	extra  []string
	logger *slog.Logger
	delay  time.Duration
	cgroup string
}

// Option configures a Runtime.
type Option func(*options) error

// WithRoot sets the OCI runtime's state directory (its --root), an
// absolute path, best on a tmpfs. Default: DefaultRoot/<name>.
func WithRoot(dir string) Option {
	return func(o *options) error {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("root %q is not an absolute path: %w", dir, ErrInvalid)
		}
		o.root = filepath.Clean(dir)
		return nil
	}
}

// WithName names the Runtime in messages and in its default root
// (default: the flavor, "runc" or "crun", else the binary's base name).
func WithName(name string) Option {
	return func(o *options) error {
		if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
			return fmt.Errorf("name %q: %w", name, ErrInvalid)
		}
		o.name = name
		return nil
	}
}

// WithLogger logs every command the Runtime runs, and its failure, at
// debug level; the failures also reach the caller as errors (default:
// discard).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("nil logger: %w", ErrInvalid)
		}
		o.logger = l
		return nil
	}
}

// WithTempDir is where Exec, Start and Delete keep their short-lived log,
// process and pid files (default os.TempDir()).
func WithTempDir(dir string) Option {
	return func(o *options) error {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("temp dir %q is not an absolute path: %w", dir, ErrInvalid)
		}
		o.tmp = dir
		return nil
	}
}

// WithWaitDelay sets how long Exec waits for the runtime after killing a
// cancelled command (DefaultWaitDelay).
func WithWaitDelay(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("wait delay %s: %w", d, ErrInvalid)
		}
		o.delay = d
		return nil
	}
}

// WithCgroupRoot says where the node's cgroup filesystems are mounted
// (DefaultCgroupRoot), for crun's check and hints.
func WithCgroupRoot(dir string) Option {
	return func(o *options) error {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("cgroup root %q is not an absolute path: %w", dir, ErrInvalid)
		}
		o.cgroup = dir
		return nil
	}
}

// ownedFlags are global flags the Runtime sets itself or forbids.
var ownedFlags = []string{"--root", "--log", "--log-format", "--systemd-cgroup", "--cgroup-manager"}

// WithGlobalArgs adds global arguments placed before every subcommand,
// e.g. "--debug" or runc's "--rootless=false". The flags the Runtime owns
// (--root, --log, --log-format) and systemd cgroup flags (only cgroupfs is
// supported) are refused.
func WithGlobalArgs(args ...string) Option {
	return func(o *options) error {
		for _, a := range args {
			for _, f := range ownedFlags {
				if a == f || strings.HasPrefix(a, f+"=") {
					return fmt.Errorf("global argument %q: the adapter owns %s: %w", a, f, ErrInvalid)
				}
			}
		}
		o.extra = append(o.extra, args...)
		return nil
	}
}

// New returns a Runtime running binary (looked up in PATH when it has no
// slash). It runs `binary --version` to learn which runtime it is, and for
// crun checks that the node's cgroups let crun work (CheckHybridCgroups).
func New(binary string, opts ...Option) (*Runtime, error) {
	r, err := open(binary, opts)
	if err != nil {
		return nil, err
	}
	return r, r.check()
}

// open makes the Runtime of binary, learning its flavor.
func open(binary string, opts []Option) (*Runtime, error) {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("oci: %w", err)
		}
	}
	path, err := exec.LookPath(binary)
	if err != nil {
		return nil, fmt.Errorf("oci: OCI runtime %q: %w: %w", binary, err, ErrNotInstalled)
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, fmt.Errorf("oci: OCI runtime %q: %w", binary, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("oci: %s --version: %w: %s", path, err, strings.TrimSpace(errOut.String()))
	}
	version := firstLine(out.String())
	r := &Runtime{binary: path, flavor: flavorOf(version), version: version,
		name: o.name, root: o.root, tmp: o.tmp, extra: o.extra, log: o.logger, delay: o.delay, cgroups: o.cgroup}
	if r.name == "" {
		r.name = string(r.flavor)
		if r.flavor == FlavorOther {
			r.name = filepath.Base(path)
		}
	}
	if r.root == "" {
		r.root = filepath.Join(DefaultRoot, r.name)
	}
	if r.tmp == "" {
		r.tmp = os.TempDir()
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.delay == 0 {
		r.delay = DefaultWaitDelay
	}
	if r.cgroups == "" {
		r.cgroups = DefaultCgroupRoot
	}
	return r, nil
}

// check fails when the node's cgroups keep the runtime from working.
func (r *Runtime) check() error {
	if r.flavor == FlavorCrun {
		if err := CheckHybridCgroups(r.cgroups); err != nil {
			return fmt.Errorf("oci: %s: %w", r.binary, err)
		}
	}
	return nil
}

// Runc returns a Runtime running the runc found in PATH.
func Runc(opts ...Option) (*Runtime, error) { return byName("runc", opts) }

// Crun returns a Runtime running the crun found in PATH. It fails with
// ErrHybridCgroups, and the cure, on a node where crun cannot create
// containers (see the package doc).
func Crun(opts ...Option) (*Runtime, error) { return byName("crun", opts) }

func byName(name string, opts []Option) (*Runtime, error) {
	if _, err := exec.LookPath(name); err != nil {
		return nil, fmt.Errorf("oci: %s is not installed (no %q in PATH %q; on Debian: apt-get install %s): %w",
			name, name, os.Getenv("PATH"), name, ErrNotInstalled)
	}
	r, err := open(name, opts)
	if err != nil {
		return nil, err
	}
	if r.flavor != Flavor(name) {
		return nil, fmt.Errorf("oci: the %s in PATH (%s) says %q, not %s: %w", name, r.binary, r.version, name, ErrNotInstalled)
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return r, nil
}

// Name is the Runtime's name (see WithName).
func (r *Runtime) Name() string { return r.name }

// Binary is the absolute path of the OCI runtime binary.
func (r *Runtime) Binary() string { return r.binary }

// Flavor tells runc from crun.
func (r *Runtime) Flavor() Flavor { return r.flavor }

// Version is the first line of `binary --version`.
func (r *Runtime) Version() string { return r.version }

// Root is the OCI runtime's state directory (its --root).
func (r *Runtime) Root() string { return r.root }

func flavorOf(version string) Flavor {
	switch {
	case strings.HasPrefix(version, "runc "):
		return FlavorRunc
	case strings.HasPrefix(version, "crun "):
		return FlavorCrun
	}
	return FlavorOther
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
