package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
)

// profiler writes CPU profiles of the benchmark's phases and, at the end,
// the mutex, block and heap profiles, into dir: in the node process in
// split mode (driven over its loopback HTTP endpoint), in this process in
// inproc mode.
type profiler struct {
	dir string
	mu  sync.Mutex
	cpu *os.File
}

func newProfiler(dir string) (*profiler, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	runtime.SetMutexProfileFraction(5)
	runtime.SetBlockProfileRate(int(1e6)) // one sample per ms blocked
	return &profiler{dir: dir}, nil
}

// start begins cpu-<name>.pprof.
func (p *profiler) start(name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cpu != nil {
		return fmt.Errorf("a CPU profile is running")
	}
	f, err := os.Create(filepath.Join(p.dir, "cpu-"+name+".pprof"))
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	p.cpu = f
	return nil
}

// stop ends the running CPU profile, if any.
func (p *profiler) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cpu == nil {
		return
	}
	pprof.StopCPUProfile()
	p.cpu.Close()
	p.cpu = nil
}

// finish stops the CPU profile and writes the others.
func (p *profiler) finish() {
	p.stop()
	for _, name := range []string{"mutex", "block", "heap"} {
		out, err := os.Create(filepath.Join(p.dir, name+".pprof"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
			continue
		}
		if err := pprof.Lookup(name).WriteTo(out, 0); err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
		}
		out.Close()
	}
}

// handle serves POST /profile/start?name=N and /profile/stop.
func (p *profiler) handle(mux *http.ServeMux) {
	mux.HandleFunc("POST /profile/start", func(w http.ResponseWriter, r *http.Request) {
		if err := p.start(r.URL.Query().Get("name")); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
		}
	})
	mux.HandleFunc("POST /profile/stop", func(w http.ResponseWriter, r *http.Request) { p.stop() })
}

// remoteProfiler drives a node process's profiler.
type remoteProfiler struct{ base func() string }

func (r remoteProfiler) call(path string) {
	resp, err := http.Post(r.base()+path, "text/plain", nil) //nolint:gosec // the node process on loopback
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	resp.Body.Close()
}
