package main

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Ways of letting crun 1.8 run on a hybrid cgroup host whose cgroup2
// hierarchy has controllers (config.CrunCgroups).
const (
	// CrunHugetlb mounts a v1 hugetlb hierarchy for the run (see
	// freeCgroup2ForCrun): a change to the host, undone at exit.
	CrunHugetlb = "hugetlb"
	// CrunHide runs crun from a thread whose private mount namespace
	// covers /sys/fs/cgroup/unified with an empty tmpfs, so crun sees a
	// plain v1 host (it still writes its cgroup2 files there, harmlessly,
	// as plain files); nothing on the host changes, so it cannot disturb
	// (or be disturbed by) another program doing the hugetlb mount at the
	// same time — sandbox/oci's tests, for one.
	CrunHide = "hide"
	// CrunAsIs does nothing.
	CrunAsIs = "none"
)

// nsThread runs functions on one locked OS thread that has its own mount
// namespace. Everything a function does with paths — mounts included —
// happens in that namespace, and processes it starts are forked from the
// thread and so start there too.
type nsThread struct {
	reqs chan func()
}

// startHiddenCgroup2 starts an nsThread whose mount namespace (a slave of
// the host's, so unmounts on the host reach it) has an empty tmpfs over
// the cgroup2 hierarchy of a hybrid host.
func startHiddenCgroup2() (*nsThread, error) {
	t := &nsThread{reqs: make(chan func())}
	ready := make(chan error, 1)
	go func() {
		// Never unlocked: when the goroutine returns, the runtime ends the
		// thread instead of reusing it in the wrong namespace.
		runtime.LockOSThread()
		if err := hideCgroup2(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for fn := range t.reqs {
			fn()
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return t, nil
}

func hideCgroup2() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare the mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make / a slave mount: %w", err)
	}
	if err := unix.Mount("tmpfs", "/sys/fs/cgroup/unified", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=755"); err != nil {
		return fmt.Errorf("cover /sys/fs/cgroup/unified: %w", err)
	}
	return nil
}

// do runs fn on the thread and waits for it.
func (t *nsThread) do(fn func() error) error {
	errc := make(chan error, 1)
	t.reqs <- func() { errc <- fn() }
	return <-errc
}

// stop ends the thread (and with it the mount namespace).
func (t *nsThread) stop() { close(t.reqs) }
