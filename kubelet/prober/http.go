package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// maxRedirects is how many same-host redirects an HTTP probe follows.
const maxRedirects = 10

// newDialer returns the dialer of every probe connection. SO_LINGER with a
// one second timeout makes close send a RST after at most a second instead
// of leaving the socket in TIME_WAIT: a node probing hundreds of containers
// every few seconds would otherwise pile up thousands of them.
func newDialer() *net.Dialer {
	return &net.Dialer{
		Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptLinger(int(fd), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 1})
			}); err != nil {
				return err
			}
			return serr
		},
	}
}

// newTransport is the HTTP probes' transport: no connection reuse (each
// probe must open a fresh connection to test the listener), no proxy, no
// transparent decompression, and no certificate verification (pods serve
// self-signed certificates; the kubelet does not verify them either).
func newTransport(d *net.Dialer) *http.Transport {
	return &http.Transport{
		DialContext:         d.DialContext,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet: probes do not verify
		DisableKeepAlives:   true,
		DisableCompression:  true,
		Proxy:               nil,
		TLSHandshakeTimeout: 10 * time.Second,
	}
}

// probeURL builds the URL of an httpGet action: the scheme (http by
// default), the host (the pod IP by default), the resolved port and the
// path (which may carry a query).
func probeURL(a *corev1.HTTPGetAction, c *corev1.Container, podIP string) (*url.URL, error) {
	scheme := strings.ToLower(string(a.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := a.Host
	if host == "" {
		host = podIP
	}
	port, err := resolvePort(a.Port, c)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(a.Path)
	if err != nil {
		// Too late to reject the path; send it as it is, as the kubelet does.
		u = &url.URL{Path: a.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	return u, nil
}

// newProbeRequest builds the GET request with the probe's headers, adding
// User-Agent and Accept: */* unless given (an Accept set to "" is dropped),
// and a Host header as the request's host.
func newProbeRequest(ctx context.Context, u *url.URL, list []corev1.HTTPHeader, userAgent string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	h := make(http.Header, len(list)+2)
	for _, e := range list {
		h.Add(e.Name, e.Value)
	}
	if _, ok := h["User-Agent"]; !ok {
		h.Set("User-Agent", userAgent)
	}
	if _, ok := h["Accept"]; !ok {
		h.Set("Accept", "*/*")
	} else if h.Get("Accept") == "" {
		h.Del("Accept")
	}
	req.Header = h
	req.Host = h.Get("Host")
	return req, nil
}

// checkRedirect follows redirects to the same host only; a redirect to
// another host ends the probe with the redirect response.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// httpProbe GETs u: 200–399 succeeds (a redirect that was not followed
// succeeds with a warning), anything else or a transport error fails.
func (m *Manager) httpProbe(ctx context.Context, u *url.URL, headers []corev1.HTTPHeader, timeout time.Duration) (verdict, string, error) {
	req, err := newProbeRequest(ctx, u, headers, m.opts.userAgent)
	if err != nil {
		return vFailure, err.Error(), nil
	}
	client := &http.Client{Transport: m.transport, Timeout: timeout, CheckRedirect: checkRedirect}
	res, err := client.Do(req)
	if err != nil {
		return vFailure, err.Error(), nil
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxOutput))
	if err != nil {
		return vFailure, "", fmt.Errorf("read probe response from %s: %w", u.Redacted(), err)
	}
	body := string(b)
	if res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusBadRequest {
		if res.StatusCode >= http.StatusMultipleChoices {
			return vWarning, "Probe terminated redirects, Response body: " + body, nil
		}
		return vSuccess, body, nil
	}
	// The body is never part of a failure message: it could leak secrets
	// into events.
	return vFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode), nil
}
