package cni

import (
	"fmt"
	"os"
	"strings"

	"github.com/podkit/podkit/cni/netns"
)

// forwardingSysctl is the IP forwarding switch for the family of ip.
func forwardingSysctl(v4 bool) string {
	if v4 {
		return "/proc/sys/net/ipv4/ip_forward"
	}
	return "/proc/sys/net/ipv6/conf/all/forwarding"
}

// swapSysctl writes value to the sysctl at path inside the namespace at
// nsPath ("" for the caller's) and returns the previous value. /proc/sys/net
// resolves to the namespace of the thread that opens it, hence netns.Do.
func swapSysctl(nsPath, path, value string) (string, error) {
	var prev string
	fn := func() error {
		old, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		prev = strings.TrimSpace(string(old))
		if prev == value {
			return nil
		}
		return os.WriteFile(path, []byte(value), 0o644)
	}
	var err error
	if nsPath == "" {
		err = fn()
	} else {
		err = netns.Do(nsPath, fn)
	}
	if err != nil {
		return "", fmt.Errorf("sysctl %s=%s: %w", path, value, err)
	}
	return prev, nil
}
