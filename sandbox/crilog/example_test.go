package crilog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/podkit/podkit/sandbox/crilog"
)

// Example writes a container's output the way the supervisor does and
// reads it back the way the kubelet serves `kubectl logs --tail=2
// --timestamps`.
func Example() {
	dir, err := os.MkdirTemp("", "crilog-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "default_web_0d5a", "app", "0.log")

	clock := func() time.Time { return time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC) }
	w, err := crilog.NewWriter(path, crilog.WithClock(clock), crilog.WithMaxLineSize(16))
	if err != nil {
		panic(err)
	}
	stdout, stderr := w.Stream(crilog.Stdout), w.Stream(crilog.Stderr)
	fmt.Fprint(stdout, "starting\nthis line is longer than sixteen bytes\n")
	fmt.Fprint(stderr, "warning: disk\n")
	fmt.Fprint(stdout, "exiting-without-a-newline")
	if err := w.Close(); err != nil { // flushes the unfinished line
		panic(err)
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	fmt.Print(string(raw))
	fmt.Println("---")
	opts := crilog.ReadOptions{TailLines: 2, Timestamps: true}
	if err := crilog.ReadLogs(context.Background(), path, opts, os.Stdout, os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// 2024-03-01T12:00:00Z stdout F starting
	// 2024-03-01T12:00:00Z stdout P this line is lon
	// 2024-03-01T12:00:00Z stdout P ger than sixteen
	// 2024-03-01T12:00:00Z stdout F  bytes
	// 2024-03-01T12:00:00Z stderr F warning: disk
	// 2024-03-01T12:00:00Z stdout P exiting-without-
	// 2024-03-01T12:00:00Z stdout P a-newline
	// ---
	// 2024-03-01T12:00:00.000000000Z warning: disk
	// 2024-03-01T12:00:00.000000000Z exiting-without-a-newline
}

// ExampleReadLogs_follow follows a log while it is written and stops once
// the container has exited (Done closed), having written everything.
func ExampleReadLogs_follow() {
	dir, err := os.MkdirTemp("", "crilog-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "0.log")
	w, err := crilog.NewWriter(path)
	if err != nil {
		panic(err)
	}

	exited := make(chan struct{})
	result := make(chan error)
	go func() {
		opts := crilog.ReadOptions{Follow: true, TailLines: -1, Done: exited, PollInterval: 10 * time.Millisecond}
		result <- crilog.ReadLogs(context.Background(), path, opts, os.Stdout, os.Stdout)
	}()

	out := w.Stream(crilog.Stdout)
	for i := range 5 {
		fmt.Fprintf(out, "line %d\n", i)
	}
	w.Close()
	close(exited)
	fmt.Println(<-result)
	// Output:
	// line 0
	// line 1
	// line 2
	// line 3
	// line 4
	// <nil>
}
