package podkit

import (
	"fmt"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/kubelet"
)

// BirthTrace turns the pod birth trace (package trace) on in an API server
// configuration: the PodBirthTrace admission plugin after cfg's mutating
// plugins, and the store stamping "stored". The composition applies it to
// its API server unless ClusterConfig.DisableBirthTrace; `podkit apiserver`
// applies it too. Call it after any change to cfg.Admission or cfg.Store.
func BirthTrace(cfg *apiserver.Config) error {
	b := admission.NewBirthTrace(cfg.Clock, cfg.Store)
	chain, st, err := admission.InstallBirthTrace(b, cfg.Admission, cfg.Store)
	if err != nil {
		return fmt.Errorf("podkit: birth trace: %w", err)
	}
	cfg.Admission, cfg.Store = chain, st
	return nil
}

// timedNetwork wraps a node's Networker so the kubelet's birth trace tells
// the sandbox's namespaces from its network (kubelet.NetworkTimer).
func timedNetwork(n cni.Networker) (cni.Networker, *kubelet.NetworkTimer) {
	if n == nil {
		return nil, nil
	}
	t := kubelet.NewNetworkTimer(nil)
	return t.Wrap(n), t
}

// configureAPIServer applies the user's hook, then the birth trace, so the
// trace wraps whatever admission chain and store the hook chose.
func (c *Cluster) configureAPIServer(ac *apiserver.Config) error {
	if c.cfg.APIServer != nil {
		if err := c.cfg.APIServer(ac); err != nil {
			return err
		}
	}
	if c.cfg.DisableBirthTrace {
		return nil
	}
	return BirthTrace(ac)
}
