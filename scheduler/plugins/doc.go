// Package plugins holds podkit's in-tree scheduler plugins, each in its own
// file and each behaving like the Kubernetes plugin of the same name:
// NodeUnschedulable, NodeName, NodeResourcesFit (with the LeastAllocated
// and MostAllocated scoring strategies), NodeResourcesBalancedAllocation,
// NodeAffinity, TaintToleration, NodePorts, PodTopologySpread,
// InterPodAffinity, ImageLocality and SchedulingGates.
//
// DefaultProfile assembles them with Kubernetes' default weights;
// NewRegistry lets a configuration file name them (scheduler.LoadConfigFile).
package plugins
