package prober

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
)

// healthServer is a grpc.health.v1 server written against the gRPC over
// HTTP/2 wire protocol: h2c, length-prefixed protobuf messages, status in
// trailers (or in the headers of a trailers-only response).
type healthServer struct {
	statuses      map[string]uint64 // a service missing here is NotFound
	unimplemented bool
	block         bool // never answer

	mu      sync.Mutex
	service string
	header  http.Header
}

func (h *healthServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/grpc" {
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return
	}
	if h.block {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/grpc")
	if h.unimplemented || r.URL.Path != healthCheckPath {
		w.Header().Set("Grpc-Status", "12")
		w.Header().Set("Grpc-Message", "unknown service grpc.health.v1.Health")
		w.WriteHeader(http.StatusOK)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil || len(body) < 5 || int(binary.BigEndian.Uint32(body[1:5])) != len(body)-5 {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	service := ""
	msg := body[5:]
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		msg = msg[n:]
		if num == 1 && typ == protowire.BytesType {
			s, n := protowire.ConsumeString(msg)
			service, msg = s, msg[n:]
			continue
		}
		msg = msg[protowire.ConsumeFieldValue(num, typ, msg):]
	}
	h.mu.Lock()
	h.service, h.header = service, r.Header.Clone()
	h.mu.Unlock()

	w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
	w.WriteHeader(http.StatusOK)
	status, ok := h.statuses[service]
	if !ok {
		w.Header().Set("Grpc-Status", "5")
		w.Header().Set("Grpc-Message", "unknown%20service") // percent-encoded as gRPC allows
		return
	}
	resp := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), status)
	frame := make([]byte, 5, 5+len(resp))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(resp)))
	_, _ = w.Write(append(frame, resp...))
	w.Header().Set("Grpc-Status", "0")
}

func newGRPCServer(t *testing.T, h *healthServer) (string, int) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.Protocols = h2cOnly()
	srv.Start()
	t.Cleanup(srv.Close)
	return hostPort(t, srv.Listener.Addr().String())
}

func grpcSpec(port int, service *string) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(port), Service: service}}}
}

func TestGRPCProbe(t *testing.T) {
	hs := &healthServer{statuses: map[string]uint64{"": servingStatusServing, "db": servingStatusNotServing, "cache": servingStatusServiceUnknown}}
	host, port := newGRPCServer(t, hs)
	unimpl := &healthServer{unimplemented: true}
	uhost, uport := newGRPCServer(t, unimpl)
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	phost, pport := hostPort(t, plain.Listener.Addr().String())
	refused := closedPort(t)
	m := newTestManager(t, nil)
	str := func(s string) *string { return &s }

	tests := []struct {
		name    string
		host    string
		port    int
		service *string
		result  Result
		message string
		prefix  bool
	}{
		{name: "serving", host: host, port: port, result: Success},
		{name: "empty service name", host: host, port: port, service: str(""), result: Success},
		{name: "not serving", host: host, port: port, service: str("db"), result: Failure,
			message: `Readiness probe failed: service unhealthy (responded with "NOT_SERVING")`},
		{name: "service unknown status", host: host, port: port, service: str("cache"), result: Failure,
			message: `Readiness probe failed: service unhealthy (responded with "SERVICE_UNKNOWN")`},
		{name: "not found", host: host, port: port, service: str("nope"), result: Failure,
			message: "Readiness probe failed: error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
		{name: "unimplemented", host: uhost, port: uport, result: Failure,
			message: "Readiness probe failed: error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"},
		{name: "refused", host: "127.0.0.1", port: refused, result: Failure,
			message: fmt.Sprintf(`Readiness probe failed: error: failed to connect service at "127.0.0.1:%d": dial tcp 127.0.0.1:%d: connect: connection refused`, refused, refused)},
		{name: "not a gRPC server", host: phost, port: pport, result: Failure,
			message: "Readiness probe failed: error: health rpc probe failed: ", prefix: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := runOnce(t, m, Readiness, grpcSpec(tt.port, tt.service), nil, tt.host)
			assert.Equal(t, tt.result, o.result, o.message)
			assert.NoError(t, o.err)
			if tt.prefix {
				assert.Regexp(t, "^"+tt.message, o.message)
			} else {
				assert.Equal(t, tt.message, o.message)
			}
		})
	}

	t.Run("request", func(t *testing.T) {
		o := runOnce(t, m, Liveness, grpcSpec(port, str("db")), nil, host)
		require.Equal(t, Failure, o.result)
		hs.mu.Lock()
		defer hs.mu.Unlock()
		assert.Equal(t, "db", hs.service)
		assert.Equal(t, "kube-probe/1.33", hs.header.Get("User-Agent"))
		assert.Equal(t, "trailers", hs.header.Get("Te"))
		assert.Equal(t, "1000m", hs.header.Get("Grpc-Timeout"))
	})
}

func TestGRPCProbeTimeout(t *testing.T) {
	// One real second, the smallest timeoutSeconds.
	host, port := newGRPCServer(t, &healthServer{block: true})
	m := newTestManager(t, nil)
	o := runOnce(t, m, Liveness, grpcSpec(port, nil), nil, host)
	assert.Equal(t, Failure, o.result)
	assert.Equal(t, "Liveness probe failed: timeout: health rpc did not complete within 1s", o.message)
}

func TestGRPCWire(t *testing.T) {
	assert.Equal(t, []byte{0, 0, 0, 0, 5, 0x0a, 3, 'f', 'o', 'o'}, encodeHealthCheckRequest("foo"))
	assert.Equal(t, []byte{0, 0, 0, 0, 0}, encodeHealthCheckRequest(""))

	for _, tt := range []struct {
		msg  []byte
		want uint64
	}{
		{nil, servingStatusUnknown},
		{[]byte{0x08, 0x01}, servingStatusServing},
		{[]byte{0x12, 0x01, 'x', 0x08, 0x02}, servingStatusNotServing},
	} {
		got, err := decodeServingStatus(tt.msg)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got)
	}
	_, err := decodeServingStatus([]byte{0x08})
	assert.Error(t, err)

	for d, want := range map[string]string{"1s": "1000m", "250ms": "250m", "1000000s": "1000000S"} {
		dur, err := parseDuration(d)
		require.NoError(t, err)
		assert.Equal(t, want, grpcTimeout(dur), d)
	}
	assert.Equal(t, "rpc error: code = Unavailable desc = x", (&rpcError{code: httpToGRPCCode(503), desc: "x"}).Error())
	assert.Equal(t, "rpc error: code = Code(99) desc = y", (&rpcError{code: 99, desc: "y"}).Error())
	assert.Equal(t, "17", strconv.Itoa(len(grpcCodeNames)))
}
