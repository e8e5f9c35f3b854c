package nodestatus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestParseThresholds(t *testing.T) {
	th, err := parseThresholds(DefaultEvictionHard())
	require.NoError(t, err)
	assert.Equal(t, int64(100*mi), th[SignalMemoryAvailable].value(8*gi))
	assert.Equal(t, int64(10*gi), th[SignalNodeFSAvailable].value(100*gi))
	assert.Equal(t, int64(5000), th[SignalNodeFSInodesFree].value(100000))
	assert.Equal(t, int64(1638), th[SignalPIDAvailable].value(32768))

	th, err = parseThresholds(map[string]string{SignalMemoryAvailable: "12.5%", SignalPIDAvailable: "1000"})
	require.NoError(t, err)
	assert.Equal(t, int64(gi), th[SignalMemoryAvailable].value(8*gi))
	assert.Equal(t, int64(1000), th[SignalPIDAvailable].value(32768))

	for _, bad := range []map[string]string{
		{"imagefs.available": "15%"},
		{SignalMemoryAvailable: "lots"},
		{SignalMemoryAvailable: "-1Mi"},
		{SignalNodeFSAvailable: "110%"},
		{SignalNodeFSAvailable: "x%"},
	} {
		_, err := parseThresholds(bad)
		assert.ErrorIs(t, err, ErrInvalidThreshold, "%v", bad)
	}
}

// TestAllocatable: capacity − reserved − eviction reservation −
// hugepages, never negative.
func TestAllocatable(t *testing.T) {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("8Gi"), corev1.ResourceEphemeralStorage: q("100Gi"),
		corev1.ResourcePods: q("110"), "hugepages-2Mi": q("1Gi"),
	}
	for _, tc := range []struct {
		name     string
		reserved corev1.ResourceList
		eviction map[string]string
		want     map[corev1.ResourceName]string
	}{
		{"defaults only", nil, nil, map[corev1.ResourceName]string{
			"cpu": "4", "memory": "7068Mi", "ephemeral-storage": "90Gi", "pods": "110", "hugepages-2Mi": "1Gi"}},
		{"kube and system reserved", corev1.ResourceList{"cpu": q("250m"), "memory": q("512Mi"), "ephemeral-storage": q("10Gi"), "pods": q("10")}, nil,
			map[corev1.ResourceName]string{"cpu": "3750m", "memory": "6556Mi", "ephemeral-storage": "80Gi", "pods": "100"}},
		{"percentage memory threshold", nil, map[string]string{SignalMemoryAvailable: "25%"},
			map[corev1.ResourceName]string{"memory": "5Gi", "ephemeral-storage": "100Gi"}},
		{"no thresholds", nil, map[string]string{}, map[corev1.ResourceName]string{"memory": "7Gi", "ephemeral-storage": "100Gi"}},
		{"never negative", corev1.ResourceList{"cpu": q("8"), "memory": q("100Gi")}, nil,
			map[corev1.ResourceName]string{"cpu": "0", "memory": "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := tc.eviction
			if ev == nil {
				ev = DefaultEvictionHard()
			}
			th, err := parseThresholds(ev)
			require.NoError(t, err)
			got := allocatable(capacity, tc.reserved, evictionReservation(th, capacity))
			for name, want := range tc.want {
				assertQuantity(t, got, name, want)
			}
		})
	}
}

func TestPressureTracker(t *testing.T) {
	th, err := parseThresholds(DefaultEvictionHard())
	require.NoError(t, err)
	p := pressureTracker{th: th, period: time.Minute, lastSeen: map[corev1.NodeConditionType]time.Time{}}
	ok := Signals{MemoryAvailable: gi, MemoryCapacity: 8 * gi}
	low := Signals{MemoryAvailable: mi, MemoryCapacity: 8 * gi}
	p.observe(t0, ok, true)
	assert.False(t, p.under(corev1.NodeMemoryPressure, t0))
	p.observe(t0, low, true)
	assert.True(t, p.under(corev1.NodeMemoryPressure, t0))
	assert.False(t, p.under(corev1.NodeDiskPressure, t0), "a signal without capacity is not observed")
	p.observe(t0.Add(30*time.Second), ok, true)
	assert.True(t, p.under(corev1.NodeMemoryPressure, t0.Add(59*time.Second)))
	assert.False(t, p.under(corev1.NodeMemoryPressure, t0.Add(time.Minute)))
}
