package prober

import (
	"context"
	"net"
	"strconv"
	"time"
)

// tcpProbe succeeds when a TCP connection to host:port opens within the
// timeout; the dial error is the failure message ("dial tcp
// 10.1.0.5:8080: connect: connection refused").
func (m *Manager) tcpProbe(ctx context.Context, host string, port int, timeout time.Duration) (verdict, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := m.dialer.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return vFailure, err.Error(), nil
	}
	if err := conn.Close(); err != nil {
		m.log.Debug("closing TCP probe connection", "host", host, "port", port, "err", err)
	}
	return vSuccess, "", nil
}
