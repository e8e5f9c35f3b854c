package nodestatus

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// fakeHost writes a /proc, /sys and /etc tree.
func fakeHost(t *testing.T, files map[string]string) *Host {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return &Host{Root: dir, Proc: filepath.Join(dir, "proc"), Sys: filepath.Join(dir, "sys"), Etc: filepath.Join(dir, "etc")}
}

func TestHostFromFakeTree(t *testing.T) {
	h := fakeHost(t, map[string]string{
		"proc/meminfo":                                             "MemTotal:        8000000 kB\nMemFree:  100 kB\nMemAvailable:    2000000 kB\nHugePages_Total: 0\n",
		"proc/loadavg":                                             "0.10 0.20 0.30 2/345 6789\n",
		"proc/sys/kernel/pid_max":                                  "4194304\n",
		"proc/sys/kernel/threads-max":                              "60000\n",
		"proc/sys/kernel/random/boot_id":                           "7f1c-boot\n",
		"proc/sys/kernel/osrelease":                                "6.1.0-18-amd64\n",
		"sys/devices/system/cpu/online":                            "0-3,6\n",
		"sys/class/dmi/id/product_uuid":                            "4C4C4544-0042\n",
		"sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":    "32\n",
		"sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages": "0\n",
		"etc/machine-id":                                           "0123abcd\n",
		"etc/os-release":                                           "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n",
	})
	capacity, err := h.Capacity(t.Context())
	require.NoError(t, err)
	assertQuantity(t, capacity, corev1.ResourceCPU, "5")
	assertQuantity(t, capacity, corev1.ResourceMemory, "8000000Ki")
	assertQuantity(t, capacity, "hugepages-2Mi", "64Mi")
	assertQuantity(t, capacity, "hugepages-1Gi", "0")
	eph := capacity[corev1.ResourceEphemeralStorage]
	assert.Positive(t, eph.Value(), "statfs of the temp dir")

	si, err := h.SystemInfo(t.Context())
	require.NoError(t, err)
	assert.Equal(t, SystemInfo{MachineID: "0123abcd", SystemUUID: "4c4c4544-0042", BootID: "7f1c-boot",
		KernelVersion: "6.1.0-18-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)"}, si)

	s, err := h.Signals(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(2000000*1024), s.MemoryAvailable)
	assert.Equal(t, int64(8000000*1024), s.MemoryCapacity)
	assert.Equal(t, int64(60000), s.PIDsMax, "threads-max is lower than pid_max")
	assert.Equal(t, int64(60000-345), s.PIDsAvailable)
	assert.Positive(t, s.NodeFSCapacity)
	assert.Positive(t, s.NodeFSInodes)
	assert.LessOrEqual(t, s.NodeFSAvailable, s.NodeFSCapacity)
}

func TestHostMissingFiles(t *testing.T) {
	h := fakeHost(t, map[string]string{"proc/meminfo": "MemFree: 1 kB\n", "etc/machine-id": "m\n"})
	_, err := h.Capacity(t.Context())
	assert.ErrorContains(t, err, "has no MemTotal")
	si, err := h.SystemInfo(t.Context())
	assert.Error(t, err, "no boot id")
	assert.Equal(t, "m", si.SystemUUID, "falls back to the machine ID")
	assert.Equal(t, "Linux", si.OSImage)
	_, err = h.Signals(t.Context())
	assert.Error(t, err)
}

// TestHostMachine reads the real host.
func TestHostMachine(t *testing.T) {
	h := HostMachine(t.TempDir())
	capacity, err := h.Capacity(t.Context())
	require.NoError(t, err)
	cpu, mem := capacity[corev1.ResourceCPU], capacity[corev1.ResourceMemory]
	assert.Positive(t, cpu.Value())
	assert.Positive(t, mem.Value())
	si, err := h.SystemInfo(t.Context())
	require.NoError(t, err)
	assert.NotEmpty(t, si.BootID)
	assert.True(t, strings.Contains(si.KernelVersion, "."), si.KernelVersion)
	s, err := h.Signals(t.Context())
	require.NoError(t, err)
	assert.Positive(t, s.MemoryAvailable)
	assert.Positive(t, s.PIDsAvailable)
	assert.Less(t, s.PIDsAvailable, s.PIDsMax)
}

func TestDefaultRouteInterface(t *testing.T) {
	route := "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
		"eth1\t0002000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n" +
		"eth0\t00000000\t0102000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
	ifc, err := defaultRouteInterface(strings.NewReader(route))
	require.NoError(t, err)
	assert.Equal(t, "eth0", ifc)
}

func TestDetectNodeIP(t *testing.T) {
	dir := t.TempDir()
	routes := filepath.Join(dir, "route")
	require.NoError(t, os.WriteFile(routes, []byte("Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n"+
		"eth0\t00000000\t0102000A\t0003\t0\t0\t100\t00000000\n"), 0o644))
	cidr := func(s string) net.Addr {
		ip, n, err := net.ParseCIDR(s)
		require.NoError(t, err)
		n.IP = ip
		return n
	}
	addrs := map[string][]net.Addr{
		"eth0": {cidr("fe80::1/64"), cidr("10.0.2.15/24")},
		"eth1": {cidr("192.168.1.5/24")},
		"v6":   {cidr("fe80::2/64"), cidr("2001:db8::5/64")},
	}
	lookup := func(name string) ([]net.Addr, error) { return addrs[name], nil }
	list := func(names ...string) interfaceList { return func() ([]string, error) { return names, nil } }

	ip, err := detectNodeIP(routes, lookup, list("eth1", "eth0"))
	require.NoError(t, err)
	assert.Equal(t, "10.0.2.15", ip.String(), "the default route's interface wins")

	ip, err = detectNodeIP(filepath.Join(dir, "none"), lookup, list("v6", "eth1"))
	require.NoError(t, err)
	assert.Equal(t, "192.168.1.5", ip.String(), "IPv4 of any interface before IPv6")

	ip, err = detectNodeIP(filepath.Join(dir, "none"), lookup, list("v6"))
	require.NoError(t, err)
	assert.Equal(t, "2001:db8::5", ip.String())

	_, err = detectNodeIP(filepath.Join(dir, "none"), lookup, list())
	assert.ErrorIs(t, err, ErrNoNodeIP)

	// The real host: whatever it finds is a global unicast address.
	if ip, err := DetectNodeIP("/proc"); err == nil {
		assert.True(t, ip.IsGlobalUnicast(), ip.String())
	}
}

func TestWithHostname(t *testing.T) {
	in := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
	assert.Equal(t, append(in, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1"}), withHostname(in, "n1"))
	has := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "custom"}}
	assert.Equal(t, has, withHostname(has, "n1"))
}
