package nodestatus

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// maxNamesPerImage is the kubelet's MaxNamesPerImageInNodeStatus.
const maxNamesPerImage = 5

// setNodeStatus fills node.status as the kubelet's default setters do,
// in their order: addresses, machine info (capacity, allocatable,
// identity), versions, daemon endpoints, images, OS and architecture,
// then the conditions MemoryPressure, DiskPressure, PIDPressure and
// Ready (last, as Kubernetes keeps it).
func (c *Controller) setNodeStatus(ctx context.Context, node *corev1.Node, now time.Time) {
	node.Status.Addresses = append([]corev1.NodeAddress(nil), c.addresses...)
	c.setMachineInfo(ctx, node)
	node.Status.NodeInfo.KubeletVersion = c.cfg.KubeletVersion
	node.Status.NodeInfo.ContainerRuntimeVersion = c.cfg.RuntimeVersion
	node.Status.NodeInfo.OperatingSystem = runtime.GOOS
	node.Status.NodeInfo.Architecture = runtime.GOARCH
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(c.cfg.KubeletPort)
	c.setImages(ctx, node)

	signals, err := c.cfg.Machine.Signals(ctx)
	if err != nil {
		c.log.Warn("reading eviction signals; pressure conditions keep their last observation", "node", c.cfg.NodeName, "err", err)
	}
	c.pressure.observe(now, signals, err == nil)
	for _, pc := range pressureConditions {
		c.setPressureCondition(node, pc, c.pressure.under(pc.typ, now), now)
	}
	c.setReadyCondition(node, now)
}

// setMachineInfo sets capacity, allocatable and the machine's identity.
// When the machine cannot be read the kubelet still reports cpu 0,
// memory 0 and the pods capacity, and the node's identity is kept.
func (c *Controller) setMachineInfo(ctx context.Context, node *corev1.Node) {
	capacity, err := c.cfg.Machine.Capacity(ctx)
	if err != nil {
		c.log.Error("reading machine capacity", "node", c.cfg.NodeName, "err", err)
		capacity = corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(0, resource.DecimalSI),
			corev1.ResourceMemory: resource.MustParse("0Gi"),
		}
	} else {
		capacity = capacity.DeepCopy()
	}
	capacity[corev1.ResourcePods] = *resource.NewQuantity(int64(c.cfg.MaxPods), resource.DecimalSI)
	node.Status.Capacity = capacity
	node.Status.Allocatable = allocatable(capacity, c.cfg.Reserved, evictionReservation(c.thresholds, capacity))

	si, err := c.cfg.Machine.SystemInfo(ctx)
	if err != nil {
		c.log.Warn("reading machine identity", "node", c.cfg.NodeName, "err", err)
	}
	info := &node.Status.NodeInfo
	if si.BootID != "" && info.BootID != "" && info.BootID != si.BootID {
		c.event(corev1.EventTypeWarning, "Rebooted",
			fmt.Sprintf("Node %s has been rebooted, boot id: %s", c.cfg.NodeName, si.BootID))
	}
	for _, f := range []struct {
		dst *string
		v   string
	}{{&info.MachineID, si.MachineID}, {&info.SystemUUID, si.SystemUUID}, {&info.BootID, si.BootID},
		{&info.KernelVersion, si.KernelVersion}, {&info.OSImage, si.OSImage}} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
}

// allocatable is capacity minus reserved and eviction reservations,
// never negative; hugepages come out of memory too (the kubelet's
// MachineInfo setter).
func allocatable(capacity, reserved, eviction corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range capacity {
		v := q.DeepCopy()
		if r, ok := reserved[name]; ok {
			v.Sub(r)
		}
		if r, ok := eviction[name]; ok {
			v.Sub(r)
		}
		if v.Sign() < 0 {
			v.Set(0)
		}
		out[name] = v
	}
	for name, q := range capacity {
		if !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			continue
		}
		mem, ok := out[corev1.ResourceMemory]
		if !ok {
			continue
		}
		mem.Sub(q)
		if mem.Sign() < 0 {
			mem.Set(0)
		}
		out[corev1.ResourceMemory] = mem
	}
	return out
}

// setImages reports the largest images first, at most MaxImages of them
// with at most five names each. On error the list is emptied, as the
// kubelet does.
func (c *Controller) setImages(ctx context.Context, node *corev1.Node) {
	if c.cfg.Images == nil {
		node.Status.Images = nil
		return
	}
	images, err := c.cfg.Images(ctx)
	if err != nil {
		c.log.Warn("listing images for the node status", "node", c.cfg.NodeName, "err", err)
		node.Status.Images = []corev1.ContainerImage{}
		return
	}
	node.Status.Images = topImages(images, c.cfg.MaxImages)
}

// topImages sorts images by size, largest first (ties keep their order),
// keeps max of them (max < 0: all) and at most five names per image.
func topImages(images []corev1.ContainerImage, max int) []corev1.ContainerImage {
	sorted := make([]corev1.ContainerImage, len(images))
	copy(sorted, images)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].SizeBytes > sorted[j].SizeBytes })
	if max >= 0 && len(sorted) > max {
		sorted = sorted[:max]
	}
	out := make([]corev1.ContainerImage, 0, len(sorted))
	for _, img := range sorted {
		names := img.Names
		if len(names) > maxNamesPerImage {
			names = names[:maxNamesPerImage]
		}
		out = append(out, corev1.ContainerImage{Names: append([]string(nil), names...), SizeBytes: img.SizeBytes})
	}
	return out
}
