package main

// The bench's measuring aids: the clients' transport, the trimmed pod
// view its watch keeps, the window profiles and the Scheduled event count.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// settledScheduledEvents counts the Scheduled events once their number
// stopped changing for settle (-1 when settle is negative).
func settledScheduledEvents(ctx context.Context, client kubernetes.Interface, settle time.Duration) (int, error) {
	if settle < 0 {
		return -1, nil
	}
	if settle == 0 {
		settle = time.Second
	}
	count := func() (int, error) {
		list, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"})
		if err != nil {
			return 0, fmt.Errorf("counting events: %w", err)
		}
		return len(list.Items), nil
	}
	last, err := count()
	if err != nil {
		return 0, err
	}
	for {
		select {
		case <-ctx.Done():
			return last, nil
		case <-time.After(settle):
		}
		n, err := count()
		if err != nil {
			return 0, err
		}
		if n == last {
			return n, nil
		}
		last = n
	}
}

// writeHeapProfile writes the heap profile to path+suffix ("" path: none).
func writeHeapProfile(path, suffix string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path + suffix)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}

// bindingView keeps of a pod what the bench's watch needs (identity and
// spec.nodeName): the bench's cache of 10,000 full pods was a fifth of
// the process's live heap, which every garbage collection in the measured
// window marks again.
func bindingView(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion},
		Spec:       corev1.PodSpec{NodeName: p.Spec.NodeName},
	}, nil
}

// benchTransport is the clients' HTTP/1.1 transport to the in-process
// server. client-go's default keeps 25 idle connections per host, fewer
// than the scheduler's 64 binds in flight plus its event writes: over
// plain HTTP/1.1 every request beyond them dialed and closed a TCP
// connection (6-10% of the run's CPU). A real scheduler talks HTTP/2 over
// TLS, one multiplexed connection, and never pays that; keeping enough
// idle connections removes the artefact without the cost of HTTP/2
// framing.
func benchTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 512,
		IdleConnTimeout:     90 * time.Second,
	}
}

// startWindowProfile starts a CPU profile into path ("": none) and returns
// the idempotent function that stops it and closes the file.
func startWindowProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("window profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("window profile: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		})
	}, nil
}
