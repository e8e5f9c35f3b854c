package nsinit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// defaultPath is the PATH used to find the executable when the process's
// environment has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// rlimitTypes maps spec rlimit names to resources.
var rlimitTypes = map[string]int{
	"RLIMIT_AS": unix.RLIMIT_AS, "RLIMIT_CORE": unix.RLIMIT_CORE, "RLIMIT_CPU": unix.RLIMIT_CPU,
	"RLIMIT_DATA": unix.RLIMIT_DATA, "RLIMIT_FSIZE": unix.RLIMIT_FSIZE, "RLIMIT_LOCKS": unix.RLIMIT_LOCKS,
	"RLIMIT_MEMLOCK": unix.RLIMIT_MEMLOCK, "RLIMIT_MSGQUEUE": unix.RLIMIT_MSGQUEUE, "RLIMIT_NICE": unix.RLIMIT_NICE,
	"RLIMIT_NOFILE": unix.RLIMIT_NOFILE, "RLIMIT_NPROC": unix.RLIMIT_NPROC, "RLIMIT_RSS": unix.RLIMIT_RSS,
	"RLIMIT_RTPRIO": unix.RLIMIT_RTPRIO, "RLIMIT_RTTIME": unix.RLIMIT_RTTIME, "RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING,
	"RLIMIT_STACK": unix.RLIMIT_STACK,
}

// applyProcess switches the calling thread (the one that will execve) to
// the process's identity: rlimits, no_new_privs, bounding set, groups, gid,
// uid (keeping capabilities across it), capability sets, umask and working
// directory. The working directory is entered before dropping privileges
// and, if that is refused, again after, as the user.
func applyProcess(p *specs.Process) error {
	for _, r := range p.Rlimits {
		res, ok := rlimitTypes[r.Type]
		if !ok {
			return fmt.Errorf("%w: unknown rlimit %q", ErrInvalidSpec, r.Type)
		}
		if err := unix.Prlimit(0, res, &unix.Rlimit{Cur: r.Soft, Max: r.Hard}, nil); err != nil {
			return fmt.Errorf("set %s to %d/%d: %w", r.Type, r.Soft, r.Hard, err)
		}
	}
	cwd := p.Cwd
	if cwd == "" {
		cwd = "/"
	}
	chdirLater := false
	if err := unix.Chdir(cwd); err != nil {
		if !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("chdir to cwd %q: %w", cwd, err)
		}
		chdirLater = true
	}
	if p.NoNewPrivileges {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("set no_new_privs: %w", err)
		}
	}
	var caps capSets
	if p.Capabilities != nil {
		var err error
		if caps, err = parseCaps(p.Capabilities); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidSpec, err)
		}
		if err := dropBounding(caps.bounding); err != nil {
			return err
		}
		if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("set keepcaps: %w", err)
		}
	}
	if err := setUser(p.User); err != nil {
		return err
	}
	if p.Capabilities != nil {
		if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 0, 0, 0, 0); err != nil {
			return fmt.Errorf("clear keepcaps: %w", err)
		}
		if err := setCaps(caps); err != nil {
			return err
		}
	}
	if p.User.Umask != nil {
		unix.Umask(int(*p.User.Umask))
	} else {
		unix.Umask(0o022)
	}
	if chdirLater {
		if err := unix.Chdir(cwd); err != nil {
			return fmt.Errorf("chdir to cwd %q as uid %d: %w", cwd, p.User.UID, err)
		}
	}
	return nil
}

// setUser sets the calling thread's groups, gid and uid (per thread: the
// thread that execs is the one that counts).
func setUser(u specs.User) error {
	groups := make([]int, len(u.AdditionalGids))
	for i, g := range u.AdditionalGids {
		groups[i] = int(g)
	}
	if err := unix.Setgroups(groups); err != nil {
		return fmt.Errorf("setgroups %v: %w", groups, err)
	}
	if _, _, e := unix.RawSyscall(sysSetresgid, uintptr(u.GID), uintptr(u.GID), uintptr(u.GID)); e != 0 {
		return fmt.Errorf("setgid %d: %w", u.GID, e)
	}
	if _, _, e := unix.RawSyscall(sysSetresuid, uintptr(u.UID), uintptr(u.UID), uintptr(u.UID)); e != 0 {
		return fmt.Errorf("setuid %d: %w", u.UID, e)
	}
	return nil
}

// processEnv returns env with HOME set from the container's /etc/passwd
// when missing (as runc does); call it after pivot_root.
func processEnv(env []string, uid uint32) []string {
	for _, e := range env {
		if strings.HasPrefix(e, "HOME=") {
			return env
		}
	}
	return append(env[:len(env):len(env)], "HOME="+homeOf(uid))
}

func homeOf(uid uint32) string {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return "/"
	}
	defer f.Close()
	want := strconv.FormatUint(uint64(uid), 10)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// name:password:uid:gid:gecos:home:shell
		fields := strings.Split(sc.Text(), ":")
		if len(fields) >= 6 && fields[2] == want && fields[5] != "" {
			return fields[5]
		}
	}
	return "/"
}

func envValue(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// execError is a failure to execute the process, with the exit status the
// child reports it with.
type execError struct {
	msg  string
	code int
}

func (e *execError) Error() string { return e.msg }

// lookPath resolves file like a shell does, with the container's PATH.
func lookPath(file string, env []string) (string, *execError) {
	if strings.Contains(file, "/") {
		if err := checkExecutable(file); err != nil {
			return "", execFailure(file, err)
		}
		return file, nil
	}
	pathEnv, ok := envValue(env, "PATH")
	if !ok {
		pathEnv = defaultPath
	}
	var denied error
	for _, dir := range strings.Split(pathEnv, ":") {
		if dir == "" {
			dir = "."
		}
		p := path.Join(dir, file)
		err := checkExecutable(p)
		if err == nil {
			return p, nil
		}
		if denied == nil && errors.Is(err, unix.EACCES) {
			denied = err
		}
	}
	if denied != nil {
		return "", execFailure(file, denied)
	}
	return "", &execError{msg: fmt.Sprintf("exec: %q: executable file not found in $PATH", file), code: ExitNotFound}
}

// checkExecutable returns nil for a regular file the caller may execute.
func checkExecutable(p string) error {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return unix.EACCES
	}
	return unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS)
}

func execFailure(file string, err error) *execError {
	code := ExitNotExecutable
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		code = ExitNotFound
	}
	return &execError{msg: fmt.Sprintf("exec: %q: %v", file, err), code: code}
}

// execProcess replaces the calling process with p; it returns only on
// failure. Descriptors above stderr are closed at exec and signals the
// parent ignored are reset to their defaults.
func execProcess(p *specs.Process, env []string) *execError {
	file, xerr := lookPath(p.Args[0], env)
	if xerr != nil {
		return xerr
	}
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		closeExecFallback()
	}
	resetSignals()
	err := unix.Exec(file, p.Args, env)
	return execFailure(p.Args[0], err)
}

// closeExecFallback marks fds above stderr close-on-exec where close_range
// is missing (Linux < 5.11).
func closeExecFallback() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
