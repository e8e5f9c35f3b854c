package podkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/podkit/podkit/image/build"
	"github.com/podkit/podkit/image/registry"
	"github.com/podkit/podkit/internal/inproc"
)

// The demo images are off the start-up's critical path. Building one
// (tar and gzip of an 8 MiB executable, twice: once for its digest, once
// for the upload) costs a few hundred milliseconds of CPU, which the
// cluster used to spend before its control plane even started. Now:
//
//   - an image the data dir's registry already holds, built from the same
//     executable (its SHA-256, recorded in <DataDir>/registry/
//     demo-images.json when it was pushed), is not built again: a resumed
//     cluster spends a stat and a manifest lookup per image;
//   - the others are built and pushed in the background while the control
//     plane and the nodes start, and the registry holds back requests for
//     their manifests until they are pushed, so a pod created at once still
//     pulls its image on the first try rather than failing and backing off.
//
// Cluster.WaitImages waits for the background builds.

// demoRecordVersion changes when FromBinary's output for the same
// executable does, so that images recorded by an older build are rebuilt.
const demoRecordVersion = 1

const demoRecordFile = "demo-images.json"

// demoRecord is what demo-images.json says about one image.
type demoRecord struct {
	Version int    `json:"version"`
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"modTime"` // ns; with Size, spares rehashing an unchanged file
	SHA256  string `json:"sha256"`  // of the executable
	Digest  string `json:"digest"`  // of the pushed manifest
}

// demoRegistry is the cluster's embedded registry, its listener fronted
// by a gate (registry.Config.Front) so that manifest requests for images
// still being seeded wait for them.
type demoRegistry struct {
	*registry.Server
	dir string
	log *slog.Logger

	mu      sync.Mutex
	pending map[string]chan struct{} // "/v2/<repo>/manifests/<tag>" → closed once pushed (or failed)
	records map[string]demoRecord
	wg      sync.WaitGroup
	errs    []error
	stop    context.CancelFunc
	ctx     context.Context
}

func newDemoRegistry(dir string, log *slog.Logger) (*demoRegistry, error) {
	r := &demoRegistry{dir: dir, log: log, pending: map[string]chan struct{}{}, records: map[string]demoRecord{}}
	s, err := registry.New(registry.Config{DataDir: dir, Addr: "127.0.0.1:0", Log: log, Front: r.gate})
	if err != nil {
		return nil, err
	}
	r.Server = s
	r.ctx, r.stop = context.WithCancel(context.Background())
	if b, err := os.ReadFile(filepath.Join(dir, demoRecordFile)); err == nil {
		if err := json.Unmarshal(b, &r.records); err != nil {
			log.Warn("demo image records unreadable; rebuilding the images", "err", err)
			r.records = map[string]demoRecord{}
		}
	}
	return r, nil
}

// gate holds back requests for the manifests of images still being
// seeded until they are pushed (or failed).
func (r *demoRegistry) gate(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet || req.Method == http.MethodHead {
			r.mu.Lock()
			ch := r.pending[req.URL.Path]
			r.mu.Unlock()
			if ch != nil {
				select {
				case <-ch:
				case <-req.Context().Done():
					return
				}
			}
		}
		api.ServeHTTP(w, req)
	})
}

// Close stops the seeding and the server; idempotent.
func (r *demoRegistry) Close() error {
	r.stop()
	r.wg.Wait()
	return r.Server.Close()
}

// wait waits for the background builds and returns their errors.
func (r *demoRegistry) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// seedImages puts the demo images into the embedded registry: at once
// those it already holds, in the background the others (see above).
func (c *Cluster) seedImages() error {
	var jobs []seedJob
	for ref, bin := range c.cfg.DemoImages {
		fi, err := os.Stat(bin)
		if err != nil {
			c.log.Warn("demo image skipped: executable missing", "image", ref, "path", bin)
			continue
		}
		repo, tag, ok := strings.Cut(ref, ":")
		if !ok || repo == "" || tag == "" {
			return fmt.Errorf("podkit: demo image %q: want name:tag", ref)
		}
		full := c.registry.Addr() + "/" + ref
		if _, err := name.ParseReference(full); err != nil {
			return fmt.Errorf("podkit: demo image %s: %w", ref, err)
		}
		c.images[ref] = full
		if !c.registry.present(ref, repo, tag, bin, fi) {
			jobs = append(jobs, seedJob{ref: ref, manifest: manifestPath(repo, tag), full: full, bin: bin, fi: fi})
		}
	}
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].ref < jobs[j].ref })
	c.registry.seed(jobs)
	return nil
}

// seedJob is a demo image to build and push.
type seedJob struct {
	ref, manifest, full, bin string
	fi                       os.FileInfo
}

func manifestPath(repo, tag string) string { return "/v2/" + repo + "/manifests/" + tag }

// present reports whether the registry holds ref as built from bin.
func (r *demoRegistry) present(ref, repo, tag, bin string, fi os.FileInfo) bool {
	r.mu.Lock()
	rec, ok := r.records[ref]
	r.mu.Unlock()
	if !ok || rec.Version != demoRecordVersion || rec.Path != bin {
		return false
	}
	if rec.Size != fi.Size() || rec.ModTime != fi.ModTime().UnixNano() {
		sum, err := fileSHA256(bin)
		if err != nil || sum != rec.SHA256 {
			return false
		}
	}
	req := httptest.NewRequest(http.MethodHead, manifestPath(repo, tag), nil)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
	w := httptest.NewRecorder()
	r.Handler().ServeHTTP(w, req)
	return w.Code == http.StatusOK && w.Header().Get("Docker-Content-Digest") == rec.Digest
}

// seed builds and pushes the jobs' images in the background, one after
// the other (the control plane is starting on the other core); until an
// image is pushed, the registry holds back requests for its manifest.
func (r *demoRegistry) seed(jobs []seedJob) {
	if len(jobs) == 0 {
		return
	}
	gates := make([]chan struct{}, len(jobs))
	r.mu.Lock()
	for i, j := range jobs {
		gates[i] = make(chan struct{})
		r.pending[j.manifest] = gates[i]
	}
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for i, j := range jobs {
			start := time.Now()
			rec, err := r.push(j.full, j.bin, j.fi)
			r.mu.Lock()
			delete(r.pending, j.manifest)
			if err != nil {
				r.errs = append(r.errs, fmt.Errorf("podkit: demo image %s: %w", j.ref, err))
			}
			r.mu.Unlock()
			close(gates[i])
			if err != nil {
				if r.ctx.Err() == nil {
					r.log.Error("demo image not seeded", "image", j.ref, "err", err)
				}
				continue
			}
			r.log.Debug("demo image seeded", "image", j.ref, "digest", rec.Digest, "elapsed", time.Since(start))
			r.record(j.ref, rec)
		}
	}()
}

func (r *demoRegistry) push(full, bin string, fi os.FileInfo) (demoRecord, error) {
	sum, err := fileSHA256(bin)
	if err != nil {
		return demoRecord{}, err
	}
	img, err := build.FromBinary(bin, build.Config{})
	if err != nil {
		return demoRecord{}, err
	}
	ref, err := name.ParseReference(full)
	if err != nil {
		return demoRecord{}, err
	}
	// In process: the push needs neither TCP nor the gate.
	if err := remote.Write(ref, img, remote.WithContext(r.ctx), remote.WithTransport(inproc.Transport(r.Handler()))); err != nil {
		return demoRecord{}, fmt.Errorf("push %s: %w", full, err)
	}
	d, err := img.Digest()
	if err != nil {
		return demoRecord{}, err
	}
	return demoRecord{Version: demoRecordVersion, Path: bin, Size: fi.Size(), ModTime: fi.ModTime().UnixNano(),
		SHA256: sum, Digest: d.String()}, nil
}

// record saves rec for ref in demo-images.json (write and rename).
func (r *demoRegistry) record(ref string, rec demoRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records[ref] = rec
	b, err := json.MarshalIndent(r.records, "", "  ")
	if err == nil {
		path := filepath.Join(r.dir, demoRecordFile)
		if err = os.WriteFile(path+".tmp", b, 0o600); err == nil {
			err = os.Rename(path+".tmp", path)
		}
	}
	if err != nil {
		r.log.Warn("recording the demo images; they will be built again next start", "err", err)
	}
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// WaitImages waits until the demo images (ClusterConfig.DemoImages) are in
// the embedded registry, and returns the errors of those that could not
// be built or pushed. Pods need not wait for it: the registry holds their
// image pulls until the images are there.
func (c *Cluster) WaitImages(ctx context.Context) error { return c.registry.wait(ctx) }
