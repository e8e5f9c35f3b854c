package plugins

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/podkit/podkit/scheduler"
)

// DefaultPlugins are the plugins of a default profile, in filter order,
// with Kubernetes' default score weights.
func DefaultPlugins() []scheduler.PluginRef {
	return []scheduler.PluginRef{
		{Name: SchedulingGatesName},
		{Name: NodeUnschedulableName},
		{Name: NodeNameName},
		{Name: TaintTolerationName, Weight: 3},
		{Name: NodeAffinityName, Weight: 2},
		{Name: NodePortsName},
		{Name: NodeResourcesFitName, Weight: 1},
		{Name: PodTopologySpreadName, Weight: 2},
		{Name: InterPodAffinityName, Weight: 2},
		{Name: BalancedAllocationName, Weight: 1},
		{Name: ImageLocalityName, Weight: 1},
	}
}

// decodeArgs decodes args strictly into T (zero T when args are empty).
func decodeArgs[T any](name string, args json.RawMessage) (T, error) {
	var v T
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("decoding args of %s: %w: %w", name, err, scheduler.ErrProfile)
	}
	return v, nil
}

func noArgs(name string, p scheduler.Plugin) scheduler.PluginFactory {
	return func(args json.RawMessage) (scheduler.Plugin, error) {
		if _, err := decodeArgs[struct{}](name, args); err != nil {
			return nil, err
		}
		return p, nil
	}
}

func withArgs[T any, P scheduler.Plugin](name string, build func(T) (P, error)) scheduler.PluginFactory {
	return func(args json.RawMessage) (scheduler.Plugin, error) {
		a, err := decodeArgs[T](name, args)
		if err != nil {
			return nil, err
		}
		return build(a)
	}
}

// NewRegistry returns the factories of every in-tree plugin, for
// scheduler.Configuration.BuildProfiles. Add your own before building.
func NewRegistry() scheduler.Registry {
	return scheduler.Registry{
		SchedulingGatesName:    noArgs(SchedulingGatesName, NewSchedulingGates()),
		NodeUnschedulableName:  noArgs(NodeUnschedulableName, NewNodeUnschedulable()),
		NodeNameName:           noArgs(NodeNameName, NewNodeName()),
		TaintTolerationName:    noArgs(TaintTolerationName, NewTaintToleration()),
		NodePortsName:          noArgs(NodePortsName, NewNodePorts()),
		ImageLocalityName:      noArgs(ImageLocalityName, NewImageLocality()),
		PodTopologySpreadName:  noArgs(PodTopologySpreadName, NewPodTopologySpread()),
		NodeAffinityName:       withArgs(NodeAffinityName, NewNodeAffinity),
		NodeResourcesFitName:   withArgs(NodeResourcesFitName, NewFit),
		BalancedAllocationName: withArgs(BalancedAllocationName, NewBalancedAllocation),
		InterPodAffinityName:   withArgs(InterPodAffinityName, NewInterPodAffinity),
	}
}

// DefaultProfile returns a profile named schedulerName with the default
// plugins and weights ("" names it default-scheduler).
func DefaultProfile(schedulerName string) scheduler.Profile {
	fit, _ := NewFit(FitArgs{})                                    // default args cannot fail
	balanced, _ := NewBalancedAllocation(BalancedAllocationArgs{}) // idem
	affinity, _ := NewNodeAffinity(NodeAffinityArgs{})
	podAffinity, _ := NewInterPodAffinity(InterPodAffinityArgs{})
	byName := map[string]scheduler.Plugin{
		SchedulingGatesName:    NewSchedulingGates(),
		NodeUnschedulableName:  NewNodeUnschedulable(),
		NodeNameName:           NewNodeName(),
		TaintTolerationName:    NewTaintToleration(),
		NodeAffinityName:       affinity,
		NodePortsName:          NewNodePorts(),
		NodeResourcesFitName:   fit,
		PodTopologySpreadName:  NewPodTopologySpread(),
		InterPodAffinityName:   podAffinity,
		BalancedAllocationName: balanced,
		ImageLocalityName:      NewImageLocality(),
	}
	p := scheduler.Profile{SchedulerName: schedulerName}
	for _, ref := range DefaultPlugins() {
		p.Plugins = append(p.Plugins, scheduler.PluginSpec{Name: ref.Name, Plugin: byName[ref.Name], Weight: int64(ref.Weight)})
	}
	return p
}

// ProfilesFromConfigFile loads a configuration file and builds its
// profiles with the in-tree plugins plus extra, returning the
// scheduler-wide options too.
func ProfilesFromConfigFile(path string, extra scheduler.Registry) ([]scheduler.Profile, []scheduler.Option, error) {
	cfg, err := scheduler.LoadConfigFile(path)
	if err != nil {
		return nil, nil, err
	}
	reg := NewRegistry()
	for name, f := range extra {
		reg[name] = f
	}
	profiles, err := cfg.BuildProfiles(reg, DefaultPlugins())
	if err != nil {
		return nil, nil, err
	}
	return profiles, cfg.Options(), nil
}
