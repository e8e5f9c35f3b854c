package scheduler

import (
	"encoding/json"
	"fmt"
)

const allPoints = PointPreEnqueue | PointPreFilter | PointFilter | PointPreScore | PointScore

// implementedPoints returns the extension points p implements.
func implementedPoints(p Plugin) ExtensionPoint {
	var pts ExtensionPoint
	if _, ok := p.(PreEnqueuer); ok {
		pts |= PointPreEnqueue
	}
	if _, ok := p.(PreFilter); ok {
		pts |= PointPreFilter
	}
	if _, ok := p.(Filter); ok {
		pts |= PointFilter
	}
	if _, ok := p.(PreScore); ok {
		pts |= PointPreScore
	}
	if _, ok := p.(Scorer); ok {
		pts |= PointScore
	}
	return pts
}

// pluginEntry is a plugin being placed in a profile.
type pluginEntry struct {
	name   string
	weight int32
	points ExtensionPoint
}

type entryList []*pluginEntry

func (l *entryList) find(name string) *pluginEntry {
	for _, e := range *l {
		if e.name == name {
			return e
		}
	}
	return nil
}

// apply applies a PluginSet to the given points.
func (l *entryList) apply(set PluginSet, points ExtensionPoint, defaults map[string]bool) {
	for _, d := range set.Disabled {
		for _, e := range *l {
			if d.Name == e.name || (d.Name == "*" && defaults[e.name]) {
				e.points &^= points
			}
		}
	}
	for _, en := range set.Enabled {
		e := l.find(en.Name)
		if e == nil {
			e = &pluginEntry{name: en.Name}
			*l = append(*l, e)
		}
		e.points |= points
		if en.Weight != 0 {
			e.weight = en.Weight
		}
	}
}

// fixedPoint checks an extension point podkit implements with one built-in
// (or no) plugin.
func fixedPoint(profile, point string, set PluginSet, allowed string) error {
	for _, e := range set.Enabled {
		if e.Name != allowed || allowed == "" {
			return fmt.Errorf("profile %q: plugin %q at extension point %s is not supported: %w", profile, e.Name, point, ErrProfile)
		}
	}
	return nil
}

func buildProfile(pc ProfileConfig, reg Registry, defaults []PluginRef) (Profile, error) {
	name := pc.SchedulerName
	if name == "" {
		name = DefaultSchedulerName
	}
	isDefault := map[string]bool{}
	var entries entryList
	for _, d := range defaults {
		entries = append(entries, &pluginEntry{name: d.Name, weight: d.Weight, points: allPoints})
		isDefault[d.Name] = true
	}
	if pl := pc.Plugins; pl != nil {
		for _, f := range []struct {
			point, allowed string
			set            PluginSet
		}{
			{"queueSort", "PrioritySort", pl.QueueSort}, {"postFilter", "DefaultPreemption", pl.PostFilter},
			{"bind", "DefaultBinder", pl.Bind}, {"reserve", "", pl.Reserve}, {"permit", "", pl.Permit},
			{"preBind", "", pl.PreBind}, {"postBind", "", pl.PostBind},
		} {
			if err := fixedPoint(name, f.point, f.set, f.allowed); err != nil {
				return Profile{}, err
			}
		}
		entries.apply(pl.MultiPoint, allPoints, isDefault)
		entries.apply(pl.PreEnqueue, PointPreEnqueue, isDefault)
		entries.apply(pl.PreFilter, PointPreFilter|PointFilter, isDefault)
		entries.apply(pl.Filter, PointPreFilter|PointFilter, isDefault)
		entries.apply(pl.PreScore, PointPreScore|PointScore, isDefault)
		entries.apply(pl.Score, PointPreScore|PointScore, isDefault)
	}
	args := map[string]json.RawMessage{}
	for _, c := range pc.PluginConfig {
		if _, ok := reg[c.Name]; !ok {
			return Profile{}, fmt.Errorf("profile %q: pluginConfig for unknown plugin %q: %w", name, c.Name, ErrProfile)
		}
		args[c.Name] = c.Args
	}
	p := Profile{SchedulerName: name, PercentageOfNodesToScore: pc.PercentageOfNodesToScore}
	for _, e := range entries {
		if e.points == 0 {
			continue
		}
		factory, ok := reg[e.name]
		if !ok {
			return Profile{}, fmt.Errorf("profile %q: unknown plugin %q: %w", name, e.name, ErrProfile)
		}
		plugin, err := factory(args[e.name])
		if err != nil {
			return Profile{}, fmt.Errorf("profile %q: plugin %q: %w", name, e.name, err)
		}
		points := e.points & implementedPoints(plugin)
		if points == 0 {
			continue // disabled at every point it implements
		}
		if points == implementedPoints(plugin) {
			points = PointAll
		}
		p.Plugins = append(p.Plugins, PluginSpec{Name: e.name, Plugin: plugin, Weight: int64(e.weight), Points: points})
	}
	return p, nil
}
