package nodestatus

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ErrNoNodeIP: no interface has a usable address.
var ErrNoNodeIP = errors.New("no global unicast address on any interface")

// interfaceAddrs lists an interface's addresses; tests replace it.
type interfaceAddrs func(name string) ([]net.Addr, error)

// interfaceList lists the up, non-loopback interfaces; tests replace it.
type interfaceList func() ([]string, error)

func systemAddrs(name string) ([]net.Addr, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	return ifc.Addrs()
}

func systemInterfaces() ([]string, error) {
	ifcs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, i := range ifcs {
		if i.Flags&net.FlagUp != 0 && i.Flags&net.FlagLoopback == 0 {
			out = append(out, i.Name)
		}
	}
	return out, nil
}

// DetectNodeIP picks the node's InternalIP without any network traffic, as
// the kubelet's ChooseHostInterface does: the first global unicast IPv4
// address of the interface holding the default route (read from
// <proc>/net/route), else the first global unicast address (IPv4 before
// IPv6) of any up, non-loopback interface.
func DetectNodeIP(proc string) (net.IP, error) {
	return detectNodeIP(filepath.Join(proc, "net/route"), systemAddrs, systemInterfaces)
}

func detectNodeIP(routeFile string, addrs interfaceAddrs, list interfaceList) (net.IP, error) {
	if f, err := os.Open(routeFile); err == nil {
		ifc, rerr := defaultRouteInterface(f)
		f.Close()
		if rerr == nil && ifc != "" {
			if as, err := addrs(ifc); err == nil {
				if ip := pickIP(as, true); ip != nil {
					return ip, nil
				}
			}
		}
	}
	names, err := list()
	if err != nil {
		return nil, fmt.Errorf("nodestatus: listing interfaces: %w", err)
	}
	for _, v4 := range []bool{true, false} {
		for _, name := range names {
			as, err := addrs(name)
			if err != nil {
				continue
			}
			if ip := pickIP(as, v4); ip != nil {
				return ip, nil
			}
		}
	}
	return nil, fmt.Errorf("nodestatus: %w", ErrNoNodeIP)
}

// defaultRouteInterface returns the interface of the IPv4 default route
// (destination and mask 00000000) in /proc/net/route's format.
func defaultRouteInterface(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) >= 8 && f[1] == "00000000" && f[7] == "00000000" {
			return f[0], nil
		}
	}
	return "", sc.Err()
}

// pickIP returns the first global unicast address of the wanted family.
func pickIP(addrs []net.Addr, v4 bool) net.IP {
	for _, a := range addrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if ip == nil || !ip.IsGlobalUnicast() || (ip.To4() != nil) != v4 {
			continue
		}
		return ip
	}
	return nil
}

// withHostname returns addrs with a Hostname address appended when none
// is there.
func withHostname(addrs []corev1.NodeAddress, hostname string) []corev1.NodeAddress {
	out := append([]corev1.NodeAddress(nil), addrs...)
	for _, a := range out {
		if a.Type == corev1.NodeHostName {
			return out
		}
	}
	return append(out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: hostname})
}
