package kubelet

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podkit/podkit/kubelet/volume"
	"github.com/podkit/podkit/sandbox"
)

// envVar is one resolved environment variable.
type envVar struct{ Name, Value string }

// makeEnv resolves a container's environment as the kubelet's
// makeEnvironmentVariables: envFrom first (configMaps and secrets, with
// prefixes; names that are not valid (relaxed, as Kubernetes 1.32+
// checks them) are skipped with an event), then env in order, each
// value with $(VAR) references to earlier variables expanded, or taken
// from a fieldRef, resourceFieldRef, configMapKeyRef or secretKeyRef.
// Optional references to missing objects or keys are skipped. The result
// is sorted by name. Service environment variables (enableServiceLinks)
// are not generated.
func (k *Kubelet) makeEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container, sb *sandbox.Sandbox) ([]envVar, error) {
	vars := map[string]string{}
	cms := map[string]*corev1.ConfigMap{}
	secrets := map[string]*corev1.Secret{}
	getCM := func(name string) (*corev1.ConfigMap, error) {
		if cm, ok := cms[name]; ok {
			return cm, nil
		}
		cm, err := k.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmap"}, name)
		}
		if err != nil {
			return nil, fmt.Errorf("couldn't get configMap %s/%s: %w", pod.Namespace, name, err)
		}
		cms[name] = cm
		return cm, nil
	}
	getSecret := func(name string) (*corev1.Secret, error) {
		if s, ok := secrets[name]; ok {
			return s, nil
		}
		s, err := k.client.CoreV1().Secrets(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secret"}, name)
		}
		if err != nil {
			return nil, fmt.Errorf("couldn't get secret %s/%s: %w", pod.Namespace, name, err)
		}
		secrets[name] = s
		return s, nil
	}

	for _, from := range c.EnvFrom {
		var data map[string]string
		var kind, name string
		switch {
		case from.ConfigMapRef != nil:
			kind, name = "configMap", from.ConfigMapRef.Name
			cm, err := getCM(name)
			if err != nil {
				if apierrors.IsNotFound(err) && optional(from.ConfigMapRef.Optional) {
					continue
				}
				return nil, err
			}
			data = cm.Data
		case from.SecretRef != nil:
			kind, name = "secret", from.SecretRef.Name
			s, err := getSecret(name)
			if err != nil {
				if apierrors.IsNotFound(err) && optional(from.SecretRef.Optional) {
					continue
				}
				return nil, err
			}
			data = make(map[string]string, len(s.Data))
			for k, v := range s.Data {
				data[k] = string(v)
			}
		default:
			continue
		}
		var invalid []string
		for key, v := range data {
			key = from.Prefix + key
			if len(validation.IsRelaxedEnvVarName(key)) > 0 {
				invalid = append(invalid, key)
				continue
			}
			vars[key] = v
		}
		if len(invalid) > 0 {
			sort.Strings(invalid)
			k.event(pod, corev1.EventTypeWarning, EventInvalidEnvironmentNames,
				fmt.Sprintf("Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.",
					strings.Join(invalid, ", "), kind, pod.Namespace, name))
		}
	}

	var withIPs *corev1.Pod // for the downward API, made on first use
	for _, e := range c.Env {
		val := e.Value
		switch {
		case val != "":
			val = expand(val, vars)
		case e.ValueFrom == nil:
		case e.ValueFrom.FieldRef != nil:
			if withIPs == nil {
				withIPs = k.podWithIPs(pod, sb)
			}
			v, err := volume.FieldValue(withIPs, e.ValueFrom.FieldRef.FieldPath)
			if err != nil {
				return nil, err
			}
			val = v
		case e.ValueFrom.ResourceFieldRef != nil:
			ref := e.ValueFrom.ResourceFieldRef
			target := c
			if ref.ContainerName != "" {
				if t, _ := containerSpec(pod, ref.ContainerName); t != nil {
					target = t
				}
			}
			v, err := volume.ContainerResourceValue(ref, target, k.allocatable())
			if err != nil {
				return nil, err
			}
			val = v
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, err := getCM(ref.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && optional(ref.Optional) {
					continue
				}
				return nil, err
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				if optional(ref.Optional) {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
			}
			val = v
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s, err := getSecret(ref.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && optional(ref.Optional) {
					continue
				}
				return nil, err
			}
			v, ok := s.Data[ref.Key]
			if !ok {
				if optional(ref.Optional) {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
			}
			val = string(v)
		}
		vars[e.Name] = val
	}

	out := make([]envVar, 0, len(vars))
	for n, v := range vars {
		out = append(out, envVar{n, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// podWithIPs is pod with the addresses the downward API reports filled in
// from the sandbox and the node.
func (k *Kubelet) podWithIPs(pod *corev1.Pod, sb *sandbox.Sandbox) *corev1.Pod {
	p := pod.DeepCopy()
	if p.Spec.NodeName == "" {
		p.Spec.NodeName = k.cfg.NodeName
	}
	p.Status.PodIPs = nil
	for _, ip := range k.sandboxIPs(pod, sb) {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip.Unmap().String()})
	}
	if len(p.Status.PodIPs) > 0 {
		p.Status.PodIP = p.Status.PodIPs[0].IP
	}
	if ips := k.nodeIPs(); len(ips) > 0 {
		p.Status.HostIPs = nil
		for _, ip := range ips {
			p.Status.HostIPs = append(p.Status.HostIPs, corev1.HostIP{IP: ip.Unmap().String()})
		}
		p.Status.HostIP = p.Status.HostIPs[0].IP
	}
	return p
}

func optional(b *bool) bool { return b != nil && *b }

// expand replaces $(NAME) with vars[NAME] as Kubernetes expands env values,
// commands and args: $$ is a literal $, a reference to an unknown name and
// an unterminated $( are kept as written.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; next {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(next)
			i++
		}
	}
	return b.String()
}

// expandAll expands every element.
func expandAll(in []string, vars map[string]string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, vars)
	}
	return out
}
