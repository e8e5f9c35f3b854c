package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCounters(t *testing.T) {
	const scrape = `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="create",version="v1"} 7
apiserver_request_total{code="409",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="create",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="resource",subresource="status",verb="update",version="v1"} 3
apiserver_watch_events_total{group="",kind="Pod",version="v1"} 12
apiserver_request_duration_seconds_bucket{verb="create",le="0.1"} 99
`
	got, err := parseCounters(strings.NewReader(scrape))
	require.NoError(t, err)
	assert.Equal(t, counters{"create pods": 8, "update pods/status": 3, "watch-event Pod": 12}, got)

	var out strings.Builder
	printDelta(&out, counters{"create pods": 2}, got, 2)
	assert.Contains(t, out.String(), "writes 9 = 4.50/pod")
	assert.Contains(t, out.String(), "watch-event Pod")
}
