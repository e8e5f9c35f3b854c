package podkit

import (
	"os"
	"testing"

	"github.com/podkit/podkit/sandbox/native"
)

// TestMain lets the test binary serve as the native runtime's supervisor
// and container init (the root package's end-to-end tests run real pods).
func TestMain(m *testing.M) {
	native.Init()
	os.Exit(m.Run())
}
