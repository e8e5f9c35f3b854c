package proxy_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/podkit/podkit/cni/cnitest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := cnitest.CheckLeaks(); err != nil {
		fmt.Fprintln(os.Stderr, "proxy tests:", err)
		code = 1
	}
	os.Exit(code)
}
