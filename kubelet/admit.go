package kubelet

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
	"github.com/podkit/podkit/scheduler/plugins"
)

// Admission reasons, as Kubernetes' kubelet reports them (status.reason of
// a rejected pod and the event's reason).
const (
	ReasonOutOfCPU              = "OutOfcpu"
	ReasonOutOfMemory           = "OutOfmemory"
	ReasonOutOfEphemeralStorage = "OutOfephemeral-storage"
	ReasonOutOfPods             = "OutOfpods"
	ReasonPodOSNotSupported     = "PodOSNotSupported"
	ReasonPodOSSelector         = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonAppArmor              = "AppArmor"
	// taintReason is tainttoleration.ErrReasonNotMatch.
	taintReason = "node(s) had untolerated taint"
)

// admit runs node admission as the kubelet's predicate admit handler does,
// against the Node (through the informer) and the pods already admitted:
// the pod's OS, resources (requests against allocatable minus the other
// pods' requests, and the pod count against min(allocatable pods,
// MaxPods)), node affinity and selector, node name, host ports, and
// NoExecute taints (the only effect the kubelet checks; static pods are
// exempt). It returns the first failure's reason and message ("" when
// admitted); the message gets "Pod was rejected: " in the pod's status.
func (k *Kubelet) admit(pod *corev1.Pod) (reason, message string) {
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != goruntime.GOOS {
		return ReasonPodOSNotSupported, "Failed to admit pod as the OS field doesn't match node OS"
	}
	if os, ok := pod.Labels[corev1.LabelOSStable]; ok && os != goruntime.GOOS {
		return ReasonPodOSSelector, "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	}
	node := k.node()
	a := &k.admitted
	a.mu.Lock()
	defer a.mu.Unlock()
	ni := a.nodeInfoLocked(node, k.cfg.MaxPods, pod.UID)
	if node == nil {
		// Before the Node exists only the pod count can be checked.
		if others := len(ni.Pods); others+1 > k.cfg.MaxPods {
			return ReasonOutOfPods, insufficient(corev1.ResourcePods, 1, int64(others), int64(k.cfg.MaxPods))
		}
		return "", ""
	}
	fit, na, np, err := a.pluginsLocked()
	if err != nil {
		return "UnexpectedAdmissionError", err.Error()
	}

	req := scheduler.PodRequests(pod, false)
	// Extended resources the node does not know are cluster-level ones
	// the kubelet cannot check.
	for name := range req.ScalarResources {
		if _, ok := ni.Allocatable.ScalarResources[name]; !ok {
			delete(req.ScalarResources, name)
		}
	}
	if ins := fit.Insufficient(&req, ni); len(ins) > 0 {
		r := ins[0]
		return outOfReason(r.Name), insufficient(r.Name, r.Requested, r.Used, r.Capacity)
	}
	if na.Filter(context.Background(), nil, pod, ni) != nil {
		return plugins.NodeAffinityName, predicateFailed(plugins.NodeAffinityName, plugins.ErrReasonNodeAffinity)
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return plugins.NodeNameName, predicateFailed(plugins.NodeNameName, plugins.ErrReasonNodeName)
	}
	if !filterPorts(np, pod, ni) {
		return plugins.NodePortsName, predicateFailed(plugins.NodePortsName, plugins.ErrReasonNodePorts)
	}
	if !isStaticPod(pod) && untoleratedNoExecute(node.Spec.Taints, pod.Spec.Tolerations) {
		return plugins.TaintTolerationName, predicateFailed(plugins.TaintTolerationName, taintReason)
	}
	return "", ""
}

func outOfReason(name corev1.ResourceName) string {
	return "OutOf" + string(name)
}

func insufficient(name corev1.ResourceName, requested, used, capacity int64) string {
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, requested, used, capacity)
}

func predicateFailed(name, desc string) string {
	return fmt.Sprintf("Predicate %s failed: %s", name, desc)
}

// untoleratedNoExecute says a NoExecute taint is not tolerated.
func untoleratedNoExecute(taints []corev1.Taint, tols []corev1.Toleration) bool {
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		tolerated := false
		for j := range tols {
			if tolerates(&tols[j], t) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return true
		}
	}
	return false
}

// tolerates applies a toleration to a taint: same effect (any when empty),
// same key (any when empty with Exists), and Exists or an equal value; Gt
// and Lt compare integers.
func tolerates(tol *corev1.Toleration, taint *corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return tol.Value == taint.Value
	case corev1.TolerationOpGt, corev1.TolerationOpLt:
		tv, err1 := strconv.ParseInt(tol.Value, 10, 64)
		nv, err2 := strconv.ParseInt(taint.Value, 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if tol.Operator == corev1.TolerationOpGt {
			return nv > tv
		}
		return nv < tv
	}
	return false
}
