package scheduler

import (
	"fmt"
	"reflect"
)

// DefaultSchedulerName is the schedulerName of pods that name none.
const DefaultSchedulerName = "default-scheduler"

// ExtensionPoint is a bit set of the extension points a PluginSpec enables.
type ExtensionPoint uint8

// Extension points; PointAll (the zero value in a PluginSpec) enables every
// point the plugin implements.
const (
	PointPreEnqueue ExtensionPoint = 1 << iota
	PointPreFilter
	PointFilter
	PointPreScore
	PointScore

	PointAll ExtensionPoint = 0
)

// PluginSpec places a plugin in a profile.
type PluginSpec struct {
	// Name identifies the plugin in messages, metrics and configuration;
	// it defaults to the plugin's Name() and must then be unique.
	Name string
	// Plugin implements one or more extension points.
	Plugin Plugin
	// Weight multiplies the plugin's normalised scores (default 1).
	Weight int64
	// Points limits the extension points used; zero uses all.
	Points ExtensionPoint
}

// Profile is one schedulerName: the plugins (filters run in order) and
// weights that schedule the pods naming it.
type Profile struct {
	// SchedulerName is matched against pod.spec.schedulerName
	// (default "default-scheduler").
	SchedulerName string
	Plugins       []PluginSpec
	// Binder binds the pods of this profile; nil binds through the API
	// server's pods/binding subresource.
	Binder Binder
	// PercentageOfNodesToScore overrides the scheduler-wide setting.
	PercentageOfNodesToScore *int32
}

type namedPlugin[T any] struct {
	name string
	p    T
}

type scorePlugin struct {
	name       string
	scorer     Scorer
	normalizer ScoreNormalizer
	weight     int64
}

// framework is a compiled Profile.
type framework struct {
	name       string
	preEnqueue []namedPlugin[PreEnqueuer]
	preFilter  []namedPlugin[PreFilter]
	filter     []namedPlugin[Filter]
	preScore   []namedPlugin[PreScore]
	score      []scorePlugin
	binder     Binder
	percentage *int32
	// events maps plugins with EnqueueExtensions to their events.
	events map[string]ClusterEvent
}

func pluginName(spec PluginSpec) string {
	if spec.Name != "" {
		return spec.Name
	}
	if n, ok := spec.Plugin.(Named); ok {
		return n.Name()
	}
	t := reflect.TypeOf(spec.Plugin)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return ""
	}
	return t.Name()
}

// newFramework compiles p; binder is the default Binder.
func newFramework(p Profile, binder Binder) (*framework, error) {
	fw := &framework{name: p.SchedulerName, binder: p.Binder, percentage: p.PercentageOfNodesToScore, events: map[string]ClusterEvent{}}
	if fw.name == "" {
		fw.name = DefaultSchedulerName
	}
	if fw.binder == nil {
		fw.binder = binder
	}
	if pct := fw.percentage; pct != nil && (*pct < 0 || *pct > 100) {
		return nil, fmt.Errorf("profile %q: percentageOfNodesToScore %d not in [0, 100]: %w", fw.name, *pct, ErrProfile)
	}
	seen := map[string]bool{}
	for _, spec := range p.Plugins {
		name := pluginName(spec)
		if spec.Plugin == nil || name == "" {
			return nil, fmt.Errorf("profile %q: plugin %q has no value or no name: %w", fw.name, name, ErrProfile)
		}
		if seen[name] {
			return nil, fmt.Errorf("profile %q: plugin %q listed twice: %w", fw.name, name, ErrProfile)
		}
		seen[name] = true
		if spec.Weight < 0 {
			return nil, fmt.Errorf("profile %q: plugin %q has negative weight %d: %w", fw.name, name, spec.Weight, ErrProfile)
		}
		weight := spec.Weight
		if weight == 0 {
			weight = 1
		}
		on := func(pt ExtensionPoint) bool { return spec.Points == PointAll || spec.Points&pt != 0 }
		used := false
		if x, ok := spec.Plugin.(PreEnqueuer); ok && on(PointPreEnqueue) {
			fw.preEnqueue = append(fw.preEnqueue, namedPlugin[PreEnqueuer]{name, x})
			used = true
		}
		if x, ok := spec.Plugin.(PreFilter); ok && on(PointPreFilter) {
			fw.preFilter = append(fw.preFilter, namedPlugin[PreFilter]{name, x})
			used = true
		}
		if x, ok := spec.Plugin.(Filter); ok && on(PointFilter) {
			fw.filter = append(fw.filter, namedPlugin[Filter]{name, x})
			used = true
		}
		if x, ok := spec.Plugin.(PreScore); ok && on(PointPreScore) {
			fw.preScore = append(fw.preScore, namedPlugin[PreScore]{name, x})
			used = true
		}
		if x, ok := spec.Plugin.(Scorer); ok && on(PointScore) {
			n, _ := spec.Plugin.(ScoreNormalizer)
			fw.score = append(fw.score, scorePlugin{name: name, scorer: x, normalizer: n, weight: weight})
			used = true
		}
		if !used {
			return nil, fmt.Errorf("profile %q: plugin %q (%T) implements no enabled extension point: %w", fw.name, name, spec.Plugin, ErrProfile)
		}
		if x, ok := spec.Plugin.(EnqueueExtensions); ok {
			fw.events[name] = x.EventsToRegister()
		}
	}
	return fw, nil
}

// eventMayHelp reports whether ev may resolve the rejections of p.
func (fw *framework) eventMayHelp(p *QueuedPodInfo, ev ClusterEvent) bool {
	if len(p.UnschedulablePlugins) == 0 {
		return true
	}
	for name := range p.UnschedulablePlugins {
		events, ok := fw.events[name]
		if !ok || events&ev != 0 {
			return true
		}
	}
	return false
}
