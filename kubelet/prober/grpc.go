package prober

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The gRPC health protocol (grpc.health.v1), spoken directly over h2c:
// a unary call is a POST of one length-prefixed message, answered by one
// message and the trailers grpc-status and grpc-message.
const (
	healthCheckPath = "/grpc.health.v1.Health/Check"
	// HealthCheckResponse.ServingStatus values.
	servingStatusUnknown        = 0
	servingStatusServing        = 1
	servingStatusNotServing     = 2
	servingStatusServiceUnknown = 3
	// gRPC status codes the probe distinguishes.
	codeOK               = 0
	codeDeadlineExceeded = 4
	codeUnimplemented    = 12
	// maxGRPCMessage bounds the response message read.
	maxGRPCMessage = 4 << 10
)

var grpcCodeNames = [...]string{
	"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
	"AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
	"Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss",
	"Unauthenticated",
}

func grpcCodeName(c int) string {
	if c >= 0 && c < len(grpcCodeNames) {
		return grpcCodeNames[c]
	}
	return "Code(" + strconv.Itoa(c) + ")"
}

var servingStatusNames = map[uint64]string{
	servingStatusUnknown:        "UNKNOWN",
	servingStatusServing:        "SERVING",
	servingStatusNotServing:     "NOT_SERVING",
	servingStatusServiceUnknown: "SERVICE_UNKNOWN",
}

// rpcError is a non-OK gRPC status.
type rpcError struct {
	code int
	desc string
}

func (e *rpcError) Error() string {
	return fmt.Sprintf("rpc error: code = %s desc = %s", grpcCodeName(e.code), e.desc)
}

// encodeHealthCheckRequest frames HealthCheckRequest{service}: a zero
// compression flag, the big-endian message length, then field 1 (string).
func encodeHealthCheckRequest(service string) []byte {
	var msg []byte
	if service != "" {
		msg = protowire.AppendTag(msg, 1, protowire.BytesType)
		msg = protowire.AppendString(msg, service)
	}
	frame := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
	return append(frame, msg...)
}

// decodeServingStatus reads HealthCheckResponse.status (field 1, an enum)
// from an unframed message; absent means UNKNOWN.
func decodeServingStatus(msg []byte) (uint64, error) {
	status := uint64(servingStatusUnknown)
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return 0, protowire.ParseError(n)
		}
		msg = msg[n:]
		if num == 1 && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(msg)
			if n < 0 {
				return 0, protowire.ParseError(n)
			}
			status, msg = v, msg[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, msg)
		if n < 0 {
			return 0, protowire.ParseError(n)
		}
		msg = msg[n:]
	}
	return status, nil
}

// grpcTimeout formats d as a grpc-timeout header value.
func grpcTimeout(d time.Duration) string {
	if ms := d.Milliseconds(); ms < 1e8 {
		return strconv.FormatInt(max(ms, 1), 10) + "m"
	}
	return strconv.FormatInt(int64(d.Seconds()), 10) + "S"
}

// grpcProbe calls Health/Check for service on host:port. Any failure fails
// the probe, with the messages of Kubernetes' gRPC prober.
func (m *Manager) grpcProbe(ctx context.Context, host string, port int, service string, timeout time.Duration) (verdict, string, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	conn, err := m.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return vFailure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, ctx.Err()), nil
		}
		return vFailure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	status, err := m.healthCheck(ctx, conn, addr, service, timeout)
	if err != nil {
		var rerr *rpcError
		switch {
		case ctx.Err() != nil && !errors.As(err, &rerr), errors.As(err, &rerr) && rerr.code == codeDeadlineExceeded:
			return vFailure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
		case errors.As(err, &rerr) && rerr.code == codeUnimplemented:
			return vFailure, "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " + rerr.desc, nil
		}
		return vFailure, fmt.Sprintf("error: health rpc probe failed: %+v", err), nil
	}
	if status != servingStatusServing {
		name, ok := servingStatusNames[status]
		if !ok {
			name = strconv.FormatUint(status, 10)
		}
		return vFailure, fmt.Sprintf("service unhealthy (responded with %q)", name), nil
	}
	return vSuccess, "service healthy", nil
}

// healthCheck performs the unary call over conn with HTTP/2 prior knowledge
// and returns the serving status, or an *rpcError for a non-OK status.
func (m *Manager) healthCheck(ctx context.Context, conn net.Conn, addr, service string, timeout time.Duration) (uint64, error) {
	var once sync.Once
	tr := &http.Transport{
		Protocols: h2cOnly(),
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			c := net.Conn(nil)
			once.Do(func() { c = conn })
			if c == nil {
				return nil, errors.New("connection already used")
			}
			return c, nil
		},
		DisableCompression: true,
	}
	defer tr.CloseIdleConnections()
	defer conn.Close()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+healthCheckPath, bytes.NewReader(encodeHealthCheckRequest(service)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	req.Header.Set("User-Agent", m.opts.userAgent)
	req.Header.Set("Grpc-Timeout", grpcTimeout(timeout))
	res, err := tr.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, &rpcError{code: httpToGRPCCode(res.StatusCode),
			desc: fmt.Sprintf("unexpected HTTP status code received from server: %d (%s)", res.StatusCode, http.StatusText(res.StatusCode))}
	}
	// A trailers-only response carries the status in the headers.
	if s := res.Header.Get("Grpc-Status"); s != "" {
		return 0, statusError(s, res.Header.Get("Grpc-Message"))
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, 5+maxGRPCMessage))
	if err != nil {
		return 0, err
	}
	if err := statusError(res.Trailer.Get("Grpc-Status"), res.Trailer.Get("Grpc-Message")); err != nil {
		return 0, err
	}
	if len(body) < 5 {
		return 0, &rpcError{code: 13, desc: "server closed the stream without sending a response message"}
	}
	if body[0] != 0 {
		return 0, &rpcError{code: 13, desc: "compressed response message not supported"}
	}
	n := binary.BigEndian.Uint32(body[1:5])
	if int(n) != len(body)-5 {
		return 0, &rpcError{code: 13, desc: fmt.Sprintf("response message of %d bytes, got %d", n, len(body)-5)}
	}
	return decodeServingStatus(body[5:])
}

func h2cOnly() *http.Protocols {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &p
}

// statusError turns grpc-status and grpc-message trailers into an error;
// "0" is nil, a missing status is an Internal error.
func statusError(status, message string) error {
	if status == "" {
		return &rpcError{code: 13, desc: "server closed the stream without sending trailers"}
	}
	code, err := strconv.Atoi(status)
	if err != nil {
		return &rpcError{code: 13, desc: fmt.Sprintf("malformed grpc-status %q", status)}
	}
	if code == codeOK {
		return nil
	}
	if m, err := url.PathUnescape(message); err == nil {
		message = m
	}
	return &rpcError{code: code, desc: message}
}

// httpToGRPCCode maps an HTTP status of a failed call as gRPC clients do.
func httpToGRPCCode(s int) int {
	switch s {
	case http.StatusBadRequest:
		return 13 // Internal
	case http.StatusUnauthorized:
		return 16 // Unauthenticated
	case http.StatusForbidden:
		return 7 // PermissionDenied
	case http.StatusNotFound:
		return codeUnimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return 14 // Unavailable
	}
	return 2 // Unknown
}
