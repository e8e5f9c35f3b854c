package cni_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/podkit/podkit/cni/cnitest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := cnitest.CheckLeaks(hostBridgePrefix); err != nil {
		fmt.Fprintln(os.Stderr, "cni tests:", err)
		code = 1
	}
	os.Exit(code)
}

// hostBridgePrefix starts the names of the bridges tests create in the
// host's own namespace.
const hostBridgePrefix = "pkh"
