package status

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Waiting reasons of containers, as the kubelet reports them.
const (
	// ReasonContainerCreating: the container has not been created yet.
	ReasonContainerCreating = "ContainerCreating"
	// ReasonPodInitializing: an app container waits for init containers.
	ReasonPodInitializing = "PodInitializing"
	// ReasonErrImagePull: the last pull failed.
	ReasonErrImagePull = "ErrImagePull"
	// ReasonImagePullBackOff: pulls are backing off.
	ReasonImagePullBackOff = "ImagePullBackOff"
	// ReasonInvalidImageName: the image reference does not parse.
	ReasonInvalidImageName = "InvalidImageName"
	// ReasonErrImageNeverPull: imagePullPolicy Never and no image.
	ReasonErrImageNeverPull = "ErrImageNeverPull"
	// ReasonCrashLoopBackOff: restarts of a failing container back off.
	ReasonCrashLoopBackOff = "CrashLoopBackOff"
	// ReasonCreateContainerConfigError: the container's configuration
	// cannot be built (missing configMap or secret key, ...).
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	// ReasonCreateContainerError: the runtime failed to create it.
	ReasonCreateContainerError = "CreateContainerError"
	// ReasonRunContainerError: the runtime failed to start it.
	ReasonRunContainerError = "RunContainerError"
	// ReasonPostStartHookError: the postStart hook failed.
	ReasonPostStartHookError = "PostStartHookError"
)

// Terminated reasons (the runtime reports Completed, Error and OOMKilled,
// see sandbox.ReasonCompleted...).
const (
	// ReasonContainerStatusUnknown: a container that was running can no
	// longer be found; it is reported terminated with exit code 137.
	ReasonContainerStatusUnknown = "ContainerStatusUnknown"
)

// Condition reasons.
const (
	ReasonUnknownContainerStatuses = "UnknownContainerStatuses"
	ReasonPodCompleted             = "PodCompleted"
	ReasonPodFailed                = "PodFailed"
	ReasonContainersNotReady       = "ContainersNotReady"
	ReasonContainersNotInitialized = "ContainersNotInitialized"
	ReasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
)

// ContainerIDScheme is the runtime type in container IDs ("podkit://<id>").
const ContainerIDScheme = "podkit"

// ContainerID returns the API form of a runtime container ID.
func ContainerID(id string) string {
	if id == "" {
		return ""
	}
	return ContainerIDScheme + "://" + id
}

// ParseContainerID returns the runtime ID of an API container ID
// ("podkit://abc" → "abc"); an ID without a scheme is returned as is.
func ParseContainerID(s string) string {
	if _, id, ok := strings.Cut(s, "://"); ok {
		return id
	}
	return s
}

// PodFullName is how the kubelet names a pod in messages:
// "name_namespace(uid)".
func PodFullName(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// CrashLoopBackOffMessage is the waiting message of a container in
// CrashLoopBackOff, e.g. "back-off 10s restarting failed container=app
// pod=web_default(uid)"; durations print as Go does (10s, 1m20s, 5m0s),
// like the kubelet's.
func CrashLoopBackOffMessage(delay time.Duration, container string, pod *corev1.Pod) string {
	return fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, container, PodFullName(pod))
}

// ImagePullBackOffMessage is the waiting message (and BackOff event) of a
// container whose image pulls back off: `Back-off pulling image "x"`.
func ImagePullBackOffMessage(image string) string {
	return fmt.Sprintf("Back-off pulling image %q", image)
}

// ErrImageNeverPullMessage is the waiting message of a container whose
// image is missing under imagePullPolicy Never.
func ErrImageNeverPullMessage(image string) string {
	return fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
}
