package prober

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// execProbe runs the command in the container: exit code 0 is success, any
// other is failure with the combined output as the message, a timeout is a
// failure "command ... timed out", and an exec that cannot run at all is an
// error.
func (m *Manager) execProbe(ctx context.Context, t target, command []string, timeout time.Duration) (verdict, string, error) {
	if m.exec == nil {
		return vUnknown, "", ErrNoExecer
	}
	cmd := expandCommand(command, t.container.Env)
	res, err := m.exec.ExecSync(ctx, t.containerID, cmd, timeout)
	if err != nil {
		if isTimeout(err) && ctx.Err() == nil {
			return vFailure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " ")), nil
		}
		return vUnknown, "", err
	}
	out := make([]byte, 0, min(len(res.Stdout)+len(res.Stderr), maxOutput))
	out = append(out, res.Stdout[:min(len(res.Stdout), maxOutput)]...)
	out = append(out, res.Stderr[:min(len(res.Stderr), maxOutput-len(out))]...)
	if res.ExitCode != 0 {
		return vFailure, string(out), nil
	}
	return vSuccess, string(out), nil
}

// expandCommand replaces $(NAME) references in the command with the values
// of the container's env vars that have a literal value, as the kubelet
// does for exec probes (which see no downward API or secret values). $$
// escapes a $; a reference to an unknown name is left as written.
func expandCommand(cmd []string, env []corev1.EnvVar) []string {
	vars := map[string]string{}
	for _, e := range env {
		if e.ValueFrom == nil {
			vars[e.Name] = e.Value
		}
	}
	out := make([]string, len(cmd))
	for i, arg := range cmd {
		out[i] = expand(arg, vars)
	}
	return out
}

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
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 { // incomplete reference: kept, the rest is scanned on
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
