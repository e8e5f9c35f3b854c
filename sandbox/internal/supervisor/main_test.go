package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// Modes of the test binary besides the supervisor.
const (
	// envTestGate: a task process of testLauncher waiting to be placed
	// (like the native init), then exec'ing its command.
	envTestGate = "PODKIT_SUPERVISOR_TEST_GATE"
	// envTestHog: allocate memory until killed.
	envTestHog = "PODKIT_SUPERVISOR_TEST_HOG"
	// envTestClient: connect, create the task given as JSON, print its
	// state and exit without closing (a kubelet that crashes).
	envTestClient = "PODKIT_SUPERVISOR_TEST_CLIENT"
	// envTestZombie: an exec task's command that leaves a child which
	// has exited (a zombie) when it exits itself; the value is the pid
	// file.
	envTestZombie = "PODKIT_SUPERVISOR_TEST_ZOMBIE"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envMode) == Mode:
		Main(testLauncher)
	case os.Getenv(envTestGate) != "":
		gateMain()
	case os.Getenv(envTestHog) != "":
		hogMain()
	case os.Getenv(envTestClient) != "":
		clientMain()
	case os.Getenv(envTestZombie) != "":
		zombieMain()
	}
	// Processes orphaned by a killed supervisor are reparented to the test
	// process instead of init (which, in some sandboxes, never reaps), so
	// the tests can reap them.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "PR_SET_CHILD_SUBREAPER:", err)
		os.Exit(1)
	}
	code := m.Run()
	for { // reap whatever was reparented to us and has exited
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			break
		}
	}
	os.Exit(code)
}

// testLauncher is the NativeLauncher of the tests: it runs the spec's
// process on the host, through the test binary in gate mode so that the
// process is placed before it runs its command, as the native init is.
func testLauncher(ctx context.Context, spec NativeSpec, stdout, stderr *os.File, place func(int) error) (int, error) {
	var s specs.Spec
	if err := readJSON(spec.SpecPath, &s); err != nil {
		return 0, err
	}
	if s.Process == nil || len(s.Process.Args) == 0 {
		return 0, fmt.Errorf("spec %s has no process", spec.SpecPath)
	}
	gateR, gateW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer gateW.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		gateR.Close()
		return 0, err
	}
	defer devnull.Close()
	proc, err := os.StartProcess("/proc/self/exe", append([]string{"podkit-test-gate"}, s.Process.Args...), &os.ProcAttr{
		Dir: s.Process.Cwd, Env: append(s.Process.Env, envTestGate+"=1"),
		Files: []*os.File{devnull, stdout, stderr, gateR},
	})
	gateR.Close()
	if err != nil {
		return 0, err
	}
	pid := proc.Pid
	proc.Release()
	if err := place(pid); err != nil {
		unix.Kill(pid, unix.SIGKILL) // the supervisor reaps it
		return 0, err
	}
	if _, err := gateW.Write([]byte{1}); err != nil {
		return 0, err
	}
	return pid, nil
}

func gateMain() {
	gate := os.NewFile(3, "gate")
	b := make([]byte, 1)
	if n, _ := gate.Read(b); n != 1 {
		os.Exit(111) // not placed: the launcher gave up
	}
	gate.Close()
	var env []string
	for _, kv := range os.Environ() {
		if len(kv) < len(envTestGate) || kv[:len(envTestGate)] != envTestGate {
			env = append(env, kv)
		}
	}
	path, err := exec.LookPath(os.Args[1])
	if err == nil {
		err = syscall.Exec(path, os.Args[1:], env)
	}
	fmt.Fprintln(os.Stderr, "gate exec:", err)
	os.Exit(127)
}

func hogMain() {
	var keep [][]byte
	for {
		b := make([]byte, 8<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
}

type clientJob struct {
	Root string
	Spec TaskSpec
}

func clientMain() {
	var job clientJob
	if err := json.Unmarshal([]byte(os.Getenv(envTestClient)), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	c, err := Connect(context.Background(), job.Root)
	if err == nil {
		var st TaskState
		st, err = c.CreateTask(context.Background(), job.Spec)
		if err == nil {
			err = json.NewEncoder(os.Stdout).Encode(st)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0) // no Close: the supervisor sees the connection drop
}

func zombieMain() {
	proc, err := os.StartProcess("/bin/sh", []string{"sh", "-c", "exit 4"}, &os.ProcAttr{})
	if err == nil {
		err = os.WriteFile(os.Getenv(envTestZombie), []byte(strconv.Itoa(proc.Pid)), 0o644)
	}
	for err == nil { // until the child is a zombie; the Go runtime never reaps it
		var st procStat
		if st, err = readProcStat(proc.Pid); err == nil && st.state == 'Z' {
			os.Exit(0)
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// isNotExist is true for a /proc file of a process that is gone.
func isNotExist(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH)
}
