package bolt_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/bolt"
)

// The crash and lock tests re-execute this test binary; these variables
// tell the child what to do.
const (
	envChild = "PODKIT_BOLT_TEST_CHILD" // "crash" or "hold"
	envPath  = "PODKIT_BOLT_TEST_PATH"
)

// TestChildProcess is the child side of TestCrashDurability and
// TestLockHeldByAnotherProcess; run directly, it skips.
func TestChildProcess(t *testing.T) {
	path := os.Getenv(envPath)
	switch os.Getenv(envChild) {
	case "crash":
		crashChild(path)
	case "hold":
		holdChild(path)
	default:
		t.Skip("runs only as the child process of the crash and lock tests")
	}
}

// crashChild creates config maps from 16 goroutines and prints
// "ACK <key> <revision>" for each one only after Create returned, until it
// is killed.
func crashChild(path string) {
	s, err := bolt.Open(path, codec(), quiet())
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	gr := schema.GroupResource{Resource: "configmaps"}
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100000 { // bounded: the parent kills us long before
				ns := fmt.Sprintf("ns%02d", g)
				name := fmt.Sprintf("cm%06d", i)
				key := storage.Key(gr, ns, name)
				out, err := s.Create(context.Background(), key, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
					Data:       map[string]string{"i": strconv.Itoa(i)},
				})
				if err != nil {
					fmt.Println("ERR", err)
					os.Exit(3)
				}
				rv, _ := storage.Revision(out)
				mu.Lock()
				fmt.Fprintf(os.Stdout, "ACK %s %d\n", key, rv)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	os.Exit(0)
}

// holdChild opens the store, says READY and keeps it open until its stdin
// closes.
func holdChild(path string) {
	s, err := bolt.Open(path, codec(), quiet())
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	fmt.Println("READY")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := s.Close(); err != nil {
		fmt.Println("ERR", err)
		os.Exit(4)
	}
	os.Exit(0)
}

func child(t *testing.T, mode, path string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChild+"="+mode, envPath+"="+path)
	cmd.Stderr = os.Stderr
	return cmd
}

func TestCrashDurability(t *testing.T) {
	const killAfter = 1000
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := child(t, "crash", path)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	acked := map[string]uint64{}
	var highest uint64
	killed := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		require.False(t, strings.HasPrefix(line, "ERR"), "child: %s", line)
		fields := strings.Fields(line)
		if len(fields) != 3 || fields[0] != "ACK" {
			continue
		}
		rv, err := strconv.ParseUint(fields[2], 10, 64)
		require.NoError(t, err, line)
		acked[fields[1]] = rv
		highest = max(highest, rv)
		if !killed && len(acked) >= killAfter {
			require.NoError(t, cmd.Process.Kill()) // SIGKILL, mid-stream
			killed = true
		}
	}
	// Lines written before the kill are still read: the pipe drains to EOF.
	require.NoError(t, sc.Err())
	waitErr := cmd.Wait()
	require.True(t, killed, "the child finished before it was killed (%v)", waitErr)
	require.Error(t, waitErr, "the child must have died of SIGKILL")

	s := open(t, path, bolt.WithLockTimeout(5*time.Second))
	ctx := context.Background()
	cur, err := s.CurrentRevision(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, cur, highest, "the revision counter survives")
	for key, rv := range acked {
		got, err := s.Get(ctx, key)
		if !assert.NoError(t, err, "acknowledged %s at revision %d is lost", key, rv) {
			continue
		}
		got2, err := storage.Revision(got)
		require.NoError(t, err)
		assert.Equal(t, rv, got2, key)
	}
	res, err := s.List(ctx, "/registry/configmaps/", storage.ListOptions{})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(res.Items), len(acked))
	for _, obj := range res.Items {
		assert.LessOrEqual(t, mustRev(t, obj), cur, "no object is newer than the store's revision")
	}
	t.Logf("acknowledged %d creates (highest revision %d) before SIGKILL; %d objects and revision %d after reopening",
		len(acked), highest, len(res.Items), cur)

	// The reopened store keeps working from there.
	out, err := s.Create(ctx, "/registry/configmaps/after/crash", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "after", Name: "crash"}})
	require.NoError(t, err)
	assert.Equal(t, cur+1, mustRev(t, out))
}

func TestLockHeldByAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.db")
	cmd := child(t, "hold", path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "READY\n", line)

	_, err = bolt.Open(path, codec(), quiet(), bolt.WithLockTimeout(200*time.Millisecond))
	require.ErrorIs(t, err, bolt.ErrLocked)
	assert.Contains(t, err.Error(), "locked")

	require.NoError(t, stdin.Close()) // the child closes its store and exits
	require.NoError(t, cmd.Wait())
	open(t, path, bolt.WithLockTimeout(time.Second))
}
