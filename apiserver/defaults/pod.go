package defaults

import (
	corev1 "k8s.io/api/core/v1"
)

// Pod defaults a Pod: everything PodTemplateSpec does for its spec, plus the
// defaults Kubernetes only applies to pods themselves (not to templates):
// requests copied from limits, pod-level requests and limits,
// enableServiceLinks, and host ports on host-network pods.
//
// Priority, preemptionPolicy, the default tolerations and the service
// account are filled in by admission plugins, and status.phase and
// status.qosClass by the pod REST strategy; Pod does not touch them.
func Pod(p *corev1.Pod) {
	// Requests are filled from limits before the spec-wide pass so that the
	// milli round-up applies to the copied values too.
	for i := range p.Spec.InitContainers {
		requestsFromLimits(&p.Spec.InitContainers[i].Resources)
	}
	for i := range p.Spec.Containers {
		requestsFromLimits(&p.Spec.Containers[i].Resources)
	}
	podSpec(&p.Spec)
	podLevelResources(p)
	if p.Spec.EnableServiceLinks == nil {
		p.Spec.EnableServiceLinks = ptrTo(corev1.DefaultEnableServiceLinks)
	}
	if p.Spec.HostNetwork {
		hostNetworkPorts(p.Spec.InitContainers)
		hostNetworkPorts(p.Spec.Containers)
	}
}

// PodTemplateSpec defaults the pod template of a workload (Deployment,
// ReplicaSet, Job, ...): the PodSpec-level defaults only.
func PodTemplateSpec(t *corev1.PodTemplateSpec) {
	podSpec(&t.Spec)
}

// podSpec holds the defaults shared by pods and pod templates.
func podSpec(s *corev1.PodSpec) {
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptrTo(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	// v1 conversion: the deprecated serviceAccount field is read when
	// serviceAccountName is empty, and always echoes serviceAccountName.
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = s.DeprecatedServiceAccount
	}
	s.DeprecatedServiceAccount = s.ServiceAccountName

	for i := range s.Volumes {
		volume(&s.Volumes[i])
	}
	for i := range s.InitContainers {
		container(&s.InitContainers[i])
	}
	for i := range s.Containers {
		container(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		container((*corev1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundUpResources(s.Overhead)
	if s.Resources != nil {
		roundUpResources(s.Resources.Limits)
		roundUpResources(s.Resources.Requests)
	}
}

func container(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = PullPolicyFor(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		envSource(c.Env[i].ValueFrom)
	}
	roundUpResources(c.Resources.Limits)
	roundUpResources(c.Resources.Requests)
	probe(c.LivenessProbe)
	probe(c.ReadinessProbe)
	probe(c.StartupProbe)
	if c.Lifecycle != nil {
		lifecycleHandler(c.Lifecycle.PostStart)
		lifecycleHandler(c.Lifecycle.PreStop)
	}
}

func envSource(src *corev1.EnvVarSource) {
	if src == nil {
		return
	}
	fieldSelector(src.FieldRef)
	if src.FileKeyRef != nil && src.FileKeyRef.Optional == nil {
		src.FileKeyRef.Optional = ptrTo(false)
	}
}

func fieldSelector(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

func probe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	httpGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptrTo("")
	}
}

func lifecycleHandler(h *corev1.LifecycleHandler) {
	if h != nil {
		httpGet(h.HTTPGet)
	}
}

func httpGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

// requestsFromLimits copies each limit without a matching request into the
// requests: a container that only states limits asks for exactly them.
func requestsFromLimits(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = make(corev1.ResourceList, len(r.Limits))
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

func hostNetworkPorts(cs []corev1.Container) {
	for i := range cs {
		for j := range cs[i].Ports {
			if cs[i].Ports[j].HostPort == 0 {
				cs[i].Ports[j].HostPort = cs[i].Ports[j].ContainerPort
			}
		}
	}
}
