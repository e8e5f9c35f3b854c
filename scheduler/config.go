package scheduler

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

// PluginFactory builds a plugin from its configuration args (the JSON of
// the pluginConfig entry; nil when there is none).
type PluginFactory func(args json.RawMessage) (Plugin, error)

// Registry maps plugin names to factories, for configuration files.
type Registry map[string]PluginFactory

// PluginRef names a plugin in a configuration, with its score weight.
type PluginRef struct {
	Name   string `json:"name"`
	Weight int32  `json:"weight,omitempty"`
}

// PluginSet enables and disables plugins at an extension point; "*" in
// Disabled disables every default plugin there.
type PluginSet struct {
	Enabled  []PluginRef `json:"enabled,omitempty"`
	Disabled []PluginRef `json:"disabled,omitempty"`
}

// PluginsConfig mirrors KubeSchedulerConfiguration's plugins. PreFilter
// and Filter are one switch here (a Filter needs its PreFilter state), as
// are PreScore and Score. QueueSort (PrioritySort), PostFilter
// (DefaultPreemption) and Bind (DefaultBinder) accept only those plugins;
// Reserve, Permit, PreBind and PostBind accept none.
type PluginsConfig struct {
	MultiPoint PluginSet `json:"multiPoint,omitempty"`
	PreEnqueue PluginSet `json:"preEnqueue,omitempty"`
	QueueSort  PluginSet `json:"queueSort,omitempty"`
	PreFilter  PluginSet `json:"preFilter,omitempty"`
	Filter     PluginSet `json:"filter,omitempty"`
	PostFilter PluginSet `json:"postFilter,omitempty"`
	PreScore   PluginSet `json:"preScore,omitempty"`
	Score      PluginSet `json:"score,omitempty"`
	Reserve    PluginSet `json:"reserve,omitempty"`
	Permit     PluginSet `json:"permit,omitempty"`
	PreBind    PluginSet `json:"preBind,omitempty"`
	Bind       PluginSet `json:"bind,omitempty"`
	PostBind   PluginSet `json:"postBind,omitempty"`
}

// PluginConfig carries one plugin's args.
type PluginConfig struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// ProfileConfig is one profile of a configuration file.
type ProfileConfig struct {
	SchedulerName            string         `json:"schedulerName,omitempty"`
	PercentageOfNodesToScore *int32         `json:"percentageOfNodesToScore,omitempty"`
	Plugins                  *PluginsConfig `json:"plugins,omitempty"`
	PluginConfig             []PluginConfig `json:"pluginConfig,omitempty"`
}

// Configuration is the scheduler's configuration file, shaped like
// kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration (fields podkit
// does not use, such as leaderElection, are ignored).
type Configuration struct {
	APIVersion               string          `json:"apiVersion,omitempty"`
	Kind                     string          `json:"kind,omitempty"`
	Parallelism              *int32          `json:"parallelism,omitempty"`
	PercentageOfNodesToScore *int32          `json:"percentageOfNodesToScore,omitempty"`
	PodInitialBackoffSeconds *int64          `json:"podInitialBackoffSeconds,omitempty"`
	PodMaxBackoffSeconds     *int64          `json:"podMaxBackoffSeconds,omitempty"`
	Profiles                 []ProfileConfig `json:"profiles,omitempty"`
}

// ConfigKind and ConfigAPIVersion identify a configuration file.
const (
	ConfigKind       = "KubeSchedulerConfiguration"
	ConfigAPIVersion = "kubescheduler.config.k8s.io/v1"
)

// LoadConfigFile reads a YAML (or JSON) configuration file.
func LoadConfigFile(path string) (*Configuration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scheduler config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes a YAML (or JSON) configuration.
func ParseConfig(data []byte) (*Configuration, error) {
	var c Configuration
	if err := yaml.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("decoding scheduler config: %w: %w", err, ErrProfile)
	}
	if c.Kind != "" && c.Kind != ConfigKind {
		return nil, fmt.Errorf("scheduler config kind %q, want %s: %w", c.Kind, ConfigKind, ErrProfile)
	}
	if c.APIVersion != "" && c.APIVersion != ConfigAPIVersion {
		return nil, fmt.Errorf("scheduler config apiVersion %q, want %s: %w", c.APIVersion, ConfigAPIVersion, ErrProfile)
	}
	return &c, nil
}

// Options converts the scheduler-wide settings.
func (c *Configuration) Options() []Option {
	var opts []Option
	if c.Parallelism != nil {
		opts = append(opts, WithParallelism(int(*c.Parallelism)))
	}
	if c.PercentageOfNodesToScore != nil {
		opts = append(opts, WithPercentageOfNodesToScore(*c.PercentageOfNodesToScore))
	}
	if c.PodInitialBackoffSeconds != nil || c.PodMaxBackoffSeconds != nil {
		initial, maximum := int64(1), int64(10)
		if c.PodInitialBackoffSeconds != nil {
			initial = *c.PodInitialBackoffSeconds
		}
		if c.PodMaxBackoffSeconds != nil {
			maximum = *c.PodMaxBackoffSeconds
		}
		opts = append(opts, WithPodBackoff(time.Duration(initial)*time.Second, time.Duration(maximum)*time.Second))
	}
	return opts
}

// BuildProfiles instantiates the configured profiles with the plugins of
// reg: each profile starts from defaults (the multiPoint plugins of a
// profile that says nothing) and applies its enabled / disabled sets. A
// configuration without profiles yields one "default-scheduler" profile.
func (c *Configuration) BuildProfiles(reg Registry, defaults []PluginRef) ([]Profile, error) {
	pcs := c.Profiles
	if len(pcs) == 0 {
		pcs = []ProfileConfig{{}}
	}
	out := make([]Profile, 0, len(pcs))
	for _, pc := range pcs {
		p, err := buildProfile(pc, reg, defaults)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
