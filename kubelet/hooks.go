package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podkit/podkit/kubelet/status"
	"github.com/podkit/podkit/sandbox"
)

// runHook runs a postStart or preStop handler as the kubelet's handler
// runner: exec through the runtime's Execer (a non-zero exit is a failure),
// httpGet to the pod (only a transport error is a failure, as in
// Kubernetes), sleep. timeout bounds exec (0: none besides ctx). It
// returns the message Kubernetes would log with the error.
func (k *Kubelet) runHook(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id string, sb *sandbox.Sandbox,
	h *corev1.LifecycleHandler, timeout time.Duration) (string, error) {
	switch {
	case h.Exec != nil:
		out, err := k.runExecHook(ctx, id, h.Exec.Command, timeout)
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, status.PodFullName(pod), err, out), err
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := k.runHTTPHook(ctx, pod, c, sb, h.HTTPGet); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.HTTPGet.Path, c.Name, status.PodFullName(pod), err), err
		}
		return "", nil
	case h.Sleep != nil:
		t := k.clock.NewTimer(time.Duration(h.Sleep.Seconds) * time.Second)
		defer t.Stop()
		select {
		case <-ctx.Done():
			err := errors.New("container terminated before sleep hook finished")
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.Sleep.Seconds, c.Name, status.PodFullName(pod), err), err
		case <-t.C():
			return "", nil
		}
	}
	err := fmt.Errorf("invalid handler: %v", h)
	return "Cannot run handler: " + err.Error(), err
}

// runExecHook runs cmd in the container; a non-zero exit is an error
// carrying the output, like the kubelet's CodeExitError.
func (k *Kubelet) runExecHook(ctx context.Context, id string, cmd []string, timeout time.Duration) (string, error) {
	if k.execer == nil {
		return "", errors.New("the runtime cannot run commands in containers")
	}
	res, err := k.execer.ExecSync(ctx, id, cmd, timeout)
	if err != nil {
		return "", err
	}
	out := string(res.Stdout) + string(res.Stderr)
	if res.ExitCode != 0 {
		return out, fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), res.ExitCode, out)
	}
	return out, nil
}

// runHTTPHook sends the hook's GET to the pod (or the host it names).
func (k *Kubelet) runHTTPHook(ctx context.Context, pod *corev1.Pod, c *corev1.Container, sb *sandbox.Sandbox, g *corev1.HTTPGetAction) error {
	host := g.Host
	if host == "" {
		host = k.podIP(pod, sb)
		if host == "" {
			return errors.New("failed to find networking container")
		}
	}
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), path))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "kube-lifecycle/1.33")
	req.Header.Set("Accept", "*/*")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Set(h.Name, h.Value)
	}
	resp, err := k.http.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	return resp.Body.Close()
}

// resolvePort turns a port number or a container port's name into a
// number (80 when empty).
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	if p.StrVal == "" {
		return 80, nil
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("couldn't find port: %s in container %s", p.StrVal, c.Name)
}
