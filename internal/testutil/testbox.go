package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podkit/podkit/overlay"
)

// Passwd and Group are the /etc/passwd and /etc/group of the testbox rootfs.
const (
	Passwd = "root:x:0:0:root:/root:/bin/testbox\napp:x:1000:1000:app:/home/app:/bin/testbox\nnobody:x:65534:65534:nobody:/nonexistent:/bin/testbox\n"
	Group  = "root:x:0:\napp:x:1000:\nextra:x:2000:app\nnobody:x:65534:\n"
)

// Testbox builds internal/testbox as a static binary (once per source
// version: the result is kept in the temporary directory keyed by a hash of
// the source) and returns its path. It fails the test when go is missing.
func Testbox(t testing.TB) string {
	t.Helper()
	root := moduleRoot(t)
	src, err := os.ReadFile(filepath.Join(root, "internal", "testbox", "main.go"))
	if err != nil {
		t.Fatalf("testbox source: %v", err)
	}
	sum := sha256.Sum256(src)
	dir := filepath.Join(os.TempDir(), "podkit-testbox-"+hex.EncodeToString(sum[:8]))
	bin := filepath.Join(dir, "testbox")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.CreateTemp(dir, "build-*")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", tmp.Name(), "./internal/testbox")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp.Name())
		t.Fatalf("building testbox: %v\n%s", err, out)
	}
	if err := os.Rename(tmp.Name(), bin); err != nil { // atomic: concurrent builders agree
		t.Fatal(err)
	}
	return bin
}

// TestboxRootfs returns a fresh directory holding a minimal root
// filesystem: /bin/testbox, /etc/passwd and /etc/group (users root, app
// 1000, nobody), and empty /tmp, /proc, /sys, /dev, /etc/hosts,
// /etc/resolv.conf and /etc/hostname.
func TestboxRootfs(t testing.TB) string {
	t.Helper()
	bin := Testbox(t)
	dir := t.TempDir()
	for _, d := range []string{"bin", "etc", "tmp", "proc", "sys", "dev", "home/app", "root"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]struct {
		data string
		mode os.FileMode
	}{
		"bin/testbox":     {string(b), 0o755},
		"etc/passwd":      {Passwd, 0o644},
		"etc/group":       {Group, 0o644},
		"etc/hosts":       {"127.0.0.1 localhost\n", 0o644},
		"etc/resolv.conf": {"", 0o644},
		"etc/hostname":    {"testbox\n", 0o644},
	}
	for name, f := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(f.data), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestboxMounts returns the overlay mounts of a fresh writable rootfs over a
// TestboxRootfs lower directory, and the overlay's upper directory (where the
// container's writes land).
func TestboxMounts(t testing.TB) (mounts []overlay.Mount, upper string) {
	t.Helper()
	lower := TestboxRootfs(t)
	d := t.TempDir()
	upper, work := filepath.Join(d, "upper"), filepath.Join(d, "work")
	for _, p := range []string{upper, work} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return []overlay.Mount{{
		Type:    "overlay",
		Source:  "overlay",
		Options: []string{"lowerdir=" + lower, "upperdir=" + upper, "workdir=" + work},
	}}, upper
}

func moduleRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		t.Fatal("not inside the podkit module")
	}
	return filepath.Dir(mod)
}
