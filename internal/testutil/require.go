package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// PrivilegedEnv names the variable that, set to "require", turns skips of
// privileged or tool-dependent tests into failures (CI sets it).
const PrivilegedEnv = "PODKIT_PRIVILEGED"

// Required reports whether skips must fail.
func Required() bool { return os.Getenv(PrivilegedEnv) == "require" }

// SkipOrFail skips the test with reason, or fails it when skips are not
// allowed.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s (and %s=require forbids skipping)", msg, PrivilegedEnv)
	}
	t.Skip(msg)
}

// RequireRoot skips (or fails, see SkipOrFail) unless running as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(t, "test needs root (uid 0), running as uid %d", os.Geteuid())
	}
}

// kubectlDir holds the versioned kubectl binaries of the machine.
const kubectlDir = "/usr/lib/google-cloud-sdk/bin"

// Kubectl returns the path of the real kubectl of minor version 1.minor
// (e.g. 32), skipping (or failing) when it is not installed.
func Kubectl(t testing.TB, minor int) string {
	t.Helper()
	path := fmt.Sprintf("%s/kubectl.1.%d", kubectlDir, minor)
	if _, err := os.Stat(path); err != nil {
		if p, err := exec.LookPath(fmt.Sprintf("kubectl.1.%d", minor)); err == nil {
			return p
		}
		SkipOrFail(t, "kubectl 1.%d not installed at %s", minor, path)
	}
	return path
}
