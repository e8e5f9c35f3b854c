package plugin

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/containernetworking/cni/libcni"
)

// ErrNoNetwork reports a conf directory without a usable network
// configuration (the kubelet's "cni config uninitialized").
var ErrNoNetwork = errors.New("no CNI network configuration")

// loopbackConf is the network containerd runs before the pod network to
// bring lo up; Networker runs it when WithLoopback is set.
const loopbackConf = `{"cniVersion":"1.0.0","name":"cni-loopback","plugins":[{"type":"loopback"}]}`

// confExtensions are the file types loaded, as the kubelet and containerd
// load them.
var confExtensions = []string{".conf", ".conflist", ".json"}

// loadNetwork picks the network configuration list from dir: the one named
// name, or, when name is empty, the first file in lexical order that parses
// (a single-plugin .conf/.json is wrapped into a list).
func loadNetwork(dir, name string) (*libcni.NetworkConfigList, error) {
	files, err := libcni.ConfFiles(dir, confExtensions)
	if err != nil {
		return nil, fmt.Errorf("read conf dir %s: %w", dir, err)
	}
	sort.Strings(files)
	var errs []error
	for _, f := range files {
		list, err := loadFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(list.Plugins) == 0 {
			errs = append(errs, fmt.Errorf("%s: no plugins", f))
			continue
		}
		if name == "" || list.Name == name {
			return list, nil
		}
	}
	what := "any network"
	if name != "" {
		what = fmt.Sprintf("network %q", name)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s in %s: %w (skipped: %w)", what, dir, ErrNoNetwork, errors.Join(errs...))
	}
	return nil, fmt.Errorf("%s in %s: %w", what, dir, ErrNoNetwork)
}

func loadFile(path string) (*libcni.NetworkConfigList, error) {
	if strings.EqualFold(filepath.Ext(path), ".conflist") {
		list, err := libcni.NetworkConfFromFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return list, nil
	}
	conf, err := libcni.ConfFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	list, err := libcni.ConfListFromConf(conf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return list, nil
}
