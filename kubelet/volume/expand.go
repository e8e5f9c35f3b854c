package volume

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// expand replaces $(NAME) references in s with lookup(NAME), following
// Kubernetes' rules for command, args, env and subPathExpr: "$$" is a
// literal "$", a "$" not followed by "(" or "$" is kept, and an unterminated
// "$(" is kept as is.
func expand(s string, lookup func(name string) string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
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
			b.WriteString(lookup(s[i+2 : i+2+end]))
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(next)
			i++
		}
	}
	return b.String()
}

// expandSubPath expands a subPathExpr with env; every referenced variable
// must exist and be non-empty.
func expandSubPath(expr string, env map[string]string) (string, error) {
	var missing []string
	out := expand(expr, func(name string) string {
		v := env[name]
		if v == "" && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", tagf(ErrSubPath, "missing value for %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// containerEnv resolves the container's env entries that need no API call:
// plain values (with $(VAR) references to earlier entries expanded, unknown
// ones left as written) and fieldRef / resourceFieldRef. Entries from
// configMapKeyRef, secretKeyRef and envFrom are absent.
func (m *Manager) containerEnv(pod *corev1.Pod, c *corev1.Container) map[string]string {
	env := make(map[string]string, len(c.Env))
	lookup := func(name string) string {
		if v, ok := env[name]; ok {
			return v
		}
		return "$(" + name + ")"
	}
	for _, e := range c.Env {
		var v string
		var err error
		switch {
		case e.ValueFrom == nil:
			v = expand(e.Value, lookup)
		case e.ValueFrom.FieldRef != nil:
			v, err = m.fieldValue(pod, e.ValueFrom.FieldRef.FieldPath)
		case e.ValueFrom.ResourceFieldRef != nil:
			fs := *e.ValueFrom.ResourceFieldRef
			target := c
			if fs.ContainerName != "" {
				target = findContainer(pod, fs.ContainerName)
			}
			if target == nil {
				delete(env, e.Name)
				continue
			}
			var alloc corev1.ResourceList
			if m.allocatable != nil {
				alloc = m.allocatable()
			}
			v, err = ContainerResourceValue(&fs, target, alloc)
		default:
			delete(env, e.Name)
			continue
		}
		if err != nil {
			delete(env, e.Name)
			continue
		}
		env[e.Name] = v
	}
	return env
}
