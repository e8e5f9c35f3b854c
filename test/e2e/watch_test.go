package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// watchTimeout bounds the wait for one watch line.
const watchTimeout = 20 * time.Second

// TestKubectlWatch: `kubectl get pods -w --output-watch-events` shows the
// existing pod as ADDED, then ADDED, MODIFIED and DELETED as another pod is
// created, labelled and deleted.
func TestKubectlWatch(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		createPod(t, srv.Client(), "before")
		w := k.Start("get", "pods", "-w", "--output-watch-events")
		hdr := w.WaitLine(watchTimeout, "header", func(string) bool { return true })
		assert.Equal(t, []string{"EVENT", "NAME", "READY", "STATUS", "RESTARTS", "AGE"}, fields(hdr))
		line := w.WaitLine(watchTimeout, "ADDED before", isEvent("ADDED", "before"))
		assert.Equal(t, []string{"ADDED", "before", "0/1", "Pending", "0"}, fields(line)[:5])

		assert.Equal(t, "pod/watched created\n", k.OK("run", "watched", "--image=nginx:1.27", "--labels=app=watched"))
		line = w.WaitLine(watchTimeout, "ADDED watched", isEvent("ADDED", "watched"))
		assert.Equal(t, []string{"ADDED", "watched", "0/1", "Pending", "0"}, fields(line)[:5])

		assert.Equal(t, "pod/watched labeled\n", k.OK("label", "pod", "watched", "stage=two"))
		w.WaitLine(watchTimeout, "MODIFIED watched", isEvent("MODIFIED", "watched"))

		assert.Equal(t, "pod \"watched\" deleted\n", k.OK("delete", "pod", "watched", "--timeout=20s"))
		w.WaitLine(watchTimeout, "DELETED watched", isEvent("DELETED", "watched"))
		n := 0
		for _, l := range tableCells(w.output()) {
			if len(l) > 1 && l[1] == "before" {
				n++
			}
		}
		assert.Equal(t, 1, n, "one event (ADDED) for the untouched pod; output:\n%s", w.output())
	})
}

// isEvent matches a --output-watch-events line of event type typ for name.
func isEvent(typ, name string) func(string) bool {
	return func(line string) bool {
		f := fields(line)
		return len(f) >= 2 && f[0] == typ && f[1] == name
	}
}
