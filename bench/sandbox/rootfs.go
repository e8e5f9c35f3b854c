package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/podkit/podkit/overlay"
)

// The testbox root filesystem's users and groups (as testutil's).
const (
	passwd = "root:x:0:0:root:/root:/bin/testbox\napp:x:1000:1000:app:/home/app:/bin/testbox\nnobody:x:65534:65534:nobody:/nonexistent:/bin/testbox\n"
	group  = "root:x:0:\napp:x:1000:\nextra:x:2000:app\nnobody:x:65534:\n"
)

// testboxPath is the container entrypoint inside the root filesystem.
const testboxPath = "/bin/testbox"

// layoutRootfs makes dir a minimal root filesystem around the static
// testbox binary — the equivalent of a cached, unpacked image. prebuilt
// names a binary to copy; empty builds internal/testbox into buildDir.
func layoutRootfs(ctx context.Context, dir, prebuilt, buildDir string) (string, error) {
	bin := prebuilt
	if bin == "" {
		var err error
		if bin, err = buildTestbox(ctx, buildDir); err != nil {
			return "", err
		}
	}
	for _, d := range []string{"bin", "etc", "tmp", "proc", "sys", "dev", "home/app", "root"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return "", fmt.Errorf("rootfs: %w", err)
		}
	}
	// The directory itself must be reachable by a non-root user after
	// pivot_root, whatever the umask made of it.
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o755}, {filepath.Join(dir, "tmp"), 0o1777}} {
		if err := os.Chmod(d.path, d.mode); err != nil {
			return "", fmt.Errorf("rootfs: %w", err)
		}
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("rootfs: testbox: %w", err)
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{"bin/testbox", b, 0o755},
		{"etc/passwd", []byte(passwd), 0o644},
		{"etc/group", []byte(group), 0o644},
		{"etc/hosts", []byte("127.0.0.1 localhost\n"), 0o644},
		{"etc/resolv.conf", nil, 0o644},
		{"etc/hostname", []byte("testbox\n"), 0o644},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return "", fmt.Errorf("rootfs: %w", err)
		}
	}
	return dir, nil
}

// buildTestbox builds internal/testbox as a static binary into dir.
func buildTestbox(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD (run inside the podkit module, or pass -testbox): %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the podkit module: run from the checkout, or pass -testbox")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "testbox")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./internal/testbox")
	cmd.Dir = filepath.Dir(mod)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build testbox: %w\n%s", err, b)
	}
	return bin, nil
}

// scratch is one container's writable layer: the overlay upper and work
// directories over the shared lower directory — what a Snapshotter's
// Prepare on a cached image returns.
type scratch struct {
	dir    string
	mounts []overlay.Mount
}

// newScratch creates the upper and work directories under parent/name.
func newScratch(parent, name, lower string) (*scratch, error) {
	d := filepath.Join(parent, name)
	upper, work := filepath.Join(d, "upper"), filepath.Join(d, "work")
	for _, p := range []string{upper, work} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, fmt.Errorf("overlay dirs: %w", err)
		}
	}
	return &scratch{dir: d, mounts: []overlay.Mount{{
		Type: "overlay", Source: "overlay",
		Options: []string{"lowerdir=" + lower, "upperdir=" + upper, "workdir=" + work},
	}}}, nil
}

func (s *scratch) remove() error { return os.RemoveAll(s.dir) }
