package cgroups_test

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// helperEnv makes the test binary act as a helper process instead of
// running tests: "hog" allocates memory without bound, "sleep" sleeps and
// "fork" starts a sleeping child of its own and prints its pid. Each waits
// for a line on stdin first, so the test can move it into a cgroup.
const helperEnv = "PODKIT_CGROUPS_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		runHelper(mode)
		return
	}
	code := m.Run()
	if leaks := leakedCgroups(); len(leaks) > 0 {
		fmt.Fprintln(os.Stderr, "cgroups tests leaked:", strings.Join(leaks, ", "))
		code = 1
	}
	os.Exit(code)
}

// leakedCgroups finds test cgroups left in any hierarchy.
func leakedCgroups() []string {
	var out []string
	for _, pattern := range []string{"/sys/fs/cgroup/podkit-cgtest-*", "/sys/fs/cgroup/*/podkit-cgtest-*", "/sys/fs/cgroup/podkit-cgbench-*", "/sys/fs/cgroup/*/podkit-cgbench-*"} {
		m, _ := filepath.Glob(pattern)
		out = append(out, m...)
	}
	return out
}

func runHelper(mode string) {
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	switch mode {
	case "hog":
		var keep [][]byte
		for i := 0; i < 512; i++ { // up to 2 GiB
			b := make([]byte, 4<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = byte(j)
			}
			keep = append(keep, b)
		}
		fmt.Println(len(keep))
	case "fork":
		self, _ := os.Executable()
		c := exec.Command(self)
		c.Env = append(os.Environ(), helperEnv+"=sleep")
		c.Stdin = strings.NewReader("\n")
		if err := c.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Println(c.Process.Pid)
	}
	time.Sleep(time.Hour)
	os.Exit(0)
}

// helper is a running helper process.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	done  chan struct{} // closed once the process is reaped
}

func startHelper(t *testing.T, mode string) *helper {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	c := exec.Command(self)
	c.Env = append(os.Environ(), helperEnv+"="+mode)
	stdin, err := c.StdinPipe()
	require.NoError(t, err)
	stdout, err := c.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, c.Start())
	h := &helper{cmd: c, stdin: stdin, out: bufio.NewReader(stdout), done: make(chan struct{})}
	go func() {
		_ = c.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		_ = c.Process.Kill()
		<-h.done
	})
	return h
}

// release lets the helper go on past its first read.
func (h *helper) release(t *testing.T) {
	t.Helper()
	_, err := io.WriteString(h.stdin, "go\n")
	require.NoError(t, err)
}

func (h *helper) readPid(t *testing.T) int {
	t.Helper()
	line, err := h.out.ReadString('\n')
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err, "helper said %q", line)
	return pid
}

// wait returns how the helper ended, failing after a generous budget.
func (h *helper) wait(t *testing.T) syscall.WaitStatus {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(60 * time.Second):
		t.Fatal("helper did not exit")
	}
	ws, ok := h.cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	return ws
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
