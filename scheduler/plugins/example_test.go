package plugins_test

import (
	"fmt"

	"github.com/podkit/podkit/scheduler"
	"github.com/podkit/podkit/scheduler/plugins"
)

// The default profile, then a bin-packing profile from a configuration.
func ExampleDefaultProfile() {
	for _, p := range plugins.DefaultProfile("").Plugins {
		fmt.Printf("%s weight=%d\n", p.Name, p.Weight)
	}

	cfg, _ := scheduler.ParseConfig([]byte(`
profiles:
- schedulerName: bin-packer
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
`))
	profiles, err := cfg.BuildProfiles(plugins.NewRegistry(), plugins.DefaultPlugins())
	fmt.Println(profiles[0].SchedulerName, len(profiles[0].Plugins), err)
	// Output:
	// SchedulingGates weight=0
	// NodeUnschedulable weight=0
	// NodeName weight=0
	// TaintToleration weight=3
	// NodeAffinity weight=2
	// NodePorts weight=0
	// NodeResourcesFit weight=1
	// PodTopologySpread weight=2
	// InterPodAffinity weight=2
	// NodeResourcesBalancedAllocation weight=1
	// ImageLocality weight=1
	// bin-packer 11 <nil>
}
