package plugins

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/scheduler"
)

func TestDefaultProfile(t *testing.T) {
	p := DefaultProfile("")
	require.Len(t, p.Plugins, len(DefaultPlugins()))
	weights := map[string]int64{}
	for _, spec := range p.Plugins {
		require.NotNil(t, spec.Plugin, spec.Name)
		weights[spec.Name] = spec.Weight
	}
	assert.Equal(t, int64(3), weights[TaintTolerationName])
	assert.Equal(t, int64(2), weights[PodTopologySpreadName])
	// The same plugins come out of an empty configuration.
	profiles, err := (&scheduler.Configuration{}).BuildProfiles(NewRegistry(), DefaultPlugins())
	require.NoError(t, err)
	require.Len(t, profiles, 1)
	assert.Equal(t, "default-scheduler", profiles[0].SchedulerName)
	assert.Len(t, profiles[0].Plugins, len(p.Plugins))
}

const configYAML = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 4
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
- schedulerName: bin-packing
  percentageOfNodesToScore: 50
  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
      - name: ImageLocality
      enabled:
      - name: NodeResourcesFit
        weight: 5
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 1
- schedulerName: minimal
  plugins:
    multiPoint:
      disabled:
      - name: "*"
      enabled:
      - name: NodeResourcesFit
      - name: TaintToleration
        weight: 7
`

func TestProfilesFromConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(configYAML), 0o600))
	profiles, opts, err := ProfilesFromConfigFile(path, nil)
	require.NoError(t, err)
	require.Len(t, profiles, 3)
	assert.Len(t, opts, 2)

	byName := func(p scheduler.Profile) map[string]scheduler.PluginSpec {
		m := map[string]scheduler.PluginSpec{}
		for _, s := range p.Plugins {
			m[s.Name] = s
		}
		return m
	}
	def := byName(profiles[0])
	assert.Len(t, def, len(DefaultPlugins()))

	bin := byName(profiles[1])
	assert.Equal(t, "bin-packing", profiles[1].SchedulerName)
	assert.Equal(t, int32(50), *profiles[1].PercentageOfNodesToScore)
	assert.NotContains(t, bin, ImageLocalityName)
	// Disabled at score only: BalancedAllocation has no other point.
	assert.NotContains(t, bin, BalancedAllocationName)
	assert.Equal(t, int64(5), bin[NodeResourcesFitName].Weight)
	fit := bin[NodeResourcesFitName].Plugin.(*Fit)
	assert.Equal(t, []ResourceSpec{{Name: "cpu", Weight: 1}}, fit.scorer.resources)

	min := byName(profiles[2])
	assert.Len(t, min, 2)
	assert.Equal(t, int64(7), min[TaintTolerationName].Weight)

	// The profiles compile into a scheduler.
	_, err = scheduler.New(scheduler.Config{Client: fakeClient(), Profiles: profiles}, opts...)
	require.NoError(t, err)
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
	}{
		{"unknown plugin", "profiles: [{plugins: {multiPoint: {enabled: [{name: Nope}]}}}]"},
		{"bad args", "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {bogus: 1}}]}]"},
		{"bad strategy", "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Foo}}}]}]"},
		{"unsupported extension point", "profiles: [{plugins: {permit: {enabled: [{name: Coscheduling}]}}}]"},
		{"wrong kind", "kind: Pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := scheduler.ParseConfig([]byte(tt.yaml))
			if err == nil {
				_, err = cfg.BuildProfiles(NewRegistry(), DefaultPlugins())
			}
			assert.ErrorIs(t, err, scheduler.ErrProfile)
		})
	}
}
