package apiserver_test

// The watchers of BenchmarkWatchDelivery/subproc run in a re-exec of the
// test binary: TestMain hands over to runWatchChild when the environment
// carries a watchChildConfig.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if cfg := os.Getenv(watchChildEnv); cfg != "" {
		os.Exit(runWatchChild(cfg))
	}
	os.Exit(m.Run())
}

// childWatchers run in a re-executed test binary.
type childWatchers struct {
	cmd  *exec.Cmd
	out  *bufio.Reader
	wait chan error
}

func startChildWatchers(b *testing.B, cfg watchChildConfig) (*childWatchers, error) {
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), watchChildEnv+"="+string(data))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start watcher process: %w", err)
	}
	c := &childWatchers{cmd: cmd, out: bufio.NewReaderSize(stdout, 1<<20), wait: make(chan error, 1)}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.wait
	})
	line, err := c.out.ReadString('\n')
	if err != nil || line != "ready\n" {
		go func() { c.wait <- cmd.Wait() }()
		return nil, fmt.Errorf("watcher process: %q, %v", line, err)
	}
	return c, nil
}

// readTimeout runs read, failing after timeout.
func readTimeout(timeout time.Duration, read func() error) error {
	done := make(chan error, 1)
	go func() { done <- read() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("watcher process: no answer within %s", timeout)
	}
}

func (c *childWatchers) synced(timeout time.Duration) error {
	return readTimeout(timeout, func() error {
		line, err := c.out.ReadString('\n')
		if err != nil || line != "synced\n" {
			return fmt.Errorf("watcher process: %q, %v", line, err)
		}
		return nil
	})
}

// results reads the samples (one line per watcher: nanoseconds separated
// by spaces) and the child's CPU time once it has exited.
func (c *childWatchers) results(timeout time.Duration) ([][]time.Duration, time.Duration, error) {
	var samples [][]time.Duration
	err := readTimeout(timeout, func() error {
		for {
			line, err := c.out.ReadString('\n')
			if err == io.EOF && line == "" {
				return nil
			}
			if err != nil {
				return fmt.Errorf("watcher process: %w", err)
			}
			var got []time.Duration
			for _, f := range strings.Fields(line) {
				ns, err := strconv.ParseInt(f, 10, 64)
				if err != nil {
					return fmt.Errorf("watcher process: sample %q: %w", f, err)
				}
				got = append(got, time.Duration(ns))
			}
			samples = append(samples, got)
		}
	})
	werr := c.cmd.Wait()
	c.wait <- werr
	if err == nil && werr != nil {
		err = fmt.Errorf("watcher process: %w", werr)
	}
	var cpu time.Duration
	if ru, ok := c.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return samples, cpu, err
}

// runWatchChild is the child process: it opens the watches, says "ready",
// says "synced" once every watcher saw the sync pod, then prints each
// watcher's samples on a line and exits.
func runWatchChild(data string) int {
	var cfg watchChildConfig
	if err := json.Unmarshal([]byte(data), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "watch child:", err)
		return 2
	}
	w, err := startRawWatchers(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "watch child:", err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	_ = out.Flush()
	if err := w.synced(60 * time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "watch child:", err)
		return 1
	}
	fmt.Fprintln(out, "synced")
	_ = out.Flush()
	for range cfg.Watchers {
		got := <-w.done
		for i, d := range got {
			if i > 0 {
				_ = out.WriteByte(' ')
			}
			out.WriteString(strconv.FormatInt(int64(d), 10))
		}
		_ = out.WriteByte('\n')
	}
	_ = out.Flush()
	return 0
}
