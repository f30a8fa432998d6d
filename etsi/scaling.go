package etsi

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// SOL001 policy types Calaf reads.
const (
	policyScalingAspects       = "tosca.policies.nfv.ScalingAspects"
	policyAspectDeltas         = "tosca.policies.nfv.VduScalingAspectDeltas"
	policyInitialDelta         = "tosca.policies.nfv.VduInitialDelta"
	policyLevels               = "tosca.policies.nfv.InstantiationLevels"
	policyVduLevels            = "tosca.policies.nfv.VduInstantiationLevels"
	maxReplicas          int64 = 10000
)

// Policy is a TOSCA policy of the flavour, its values evaluated.
type Policy struct {
	Name       string
	Types      []string
	Properties map[string]any
	// Targets are the node templates the policy targets.
	Targets []string
}

func (p Policy) is(typeName string) bool {
	for _, t := range p.Types {
		if t == typeName {
			return true
		}
	}
	return false
}

// aspect is a scaling aspect of the flavour.
type aspect struct {
	maxLevel   int64
	stepDeltas []string
}

// scaling is what the scaling policies of a flavour say.
type scaling struct {
	aspects      map[string]aspect
	deltas       map[string]map[string]map[string]int64 // VDU → aspect → delta → instances
	initial      map[string]int64                       // VDU → initial instances
	levels       map[string]map[string]int64            // level → aspect → scale level
	defaultLevel string
	vduLevels    map[string]map[string]int64 // VDU → level → instances
}

// readScaling collects the flavour's scaling policies.
func readScaling(policies []Policy) *scaling {
	s := &scaling{aspects: map[string]aspect{}, deltas: map[string]map[string]map[string]int64{},
		initial: map[string]int64{}, levels: map[string]map[string]int64{}, vduLevels: map[string]map[string]int64{}}
	for _, p := range policies {
		switch {
		case p.is(policyScalingAspects):
			for id, a := range asMap(p.Properties["aspects"]) {
				m := asMap(a)
				s.aspects[id] = aspect{maxLevel: asInt(m["max_scale_level"]), stepDeltas: asStrings(m["step_deltas"])}
			}
		case p.is(policyAspectDeltas):
			id := asString(p.Properties["aspect"])
			for _, vdu := range p.Targets {
				if s.deltas[vdu] == nil {
					s.deltas[vdu] = map[string]map[string]int64{}
				}
				s.deltas[vdu][id] = map[string]int64{}
				for name, level := range asMap(p.Properties["deltas"]) {
					s.deltas[vdu][id][name] = asInt(asMap(level)["number_of_instances"])
				}
			}
		case p.is(policyInitialDelta):
			for _, vdu := range p.Targets {
				s.initial[vdu] = asInt(asMap(p.Properties["initial_delta"])["number_of_instances"])
			}
		case p.is(policyLevels):
			s.defaultLevel = asString(p.Properties["default_level"])
			for id, level := range asMap(p.Properties["levels"]) {
				s.levels[id] = map[string]int64{}
				for aspectID, info := range asMap(asMap(level)["scale_info"]) {
					s.levels[id][aspectID] = asInt(asMap(info)["scale_level"])
				}
			}
		case p.is(policyVduLevels):
			for _, vdu := range p.Targets {
				if s.vduLevels[vdu] == nil {
					s.vduLevels[vdu] = map[string]int64{}
				}
				for id, level := range asMap(p.Properties["levels"]) {
					s.vduLevels[vdu][id] = asInt(asMap(level)["number_of_instances"])
				}
			}
		}
	}
	return s
}

// level returns the instantiation level to deploy: the one requested, else the default;
// "" when the flavour has none. An unknown level is an error listing the flavour's levels.
func (s *scaling) level(requested string) (string, error) {
	if requested == "" {
		return s.defaultLevel, nil
	}
	if _, ok := s.levels[requested]; ok {
		return requested, nil
	}
	if len(s.levels) == 0 {
		return "", fmt.Errorf("instantiationLevelId %q: the deployment flavour has no instantiation levels", requested)
	}
	return "", fmt.Errorf("instantiationLevelId %q is not an instantiation level of the deployment flavour; its levels: %s", requested, strings.Join(slices.Sorted(maps.Keys(s.levels)), ", "))
}

// scaleLevel is the scale level of an aspect at an instantiation level (0 when unsaid).
func (s *scaling) scaleLevel(level, aspectID string) int64 {
	return s.levels[level][aspectID]
}

// replicas returns how many instances a VDU runs at an instantiation level, its aspects'
// scale levels overridden by scale (SOL003 scale; nil keeps the level's). The level's
// VduInstantiationLevels entry, else its initial delta (else its profile's minimum, else
// 1) plus the deltas of the scale levels of its aspects, gives the level's instances; an
// overridden aspect adds the deltas between the level's scale level and its own. The
// result must lie within the VDU's profile.
func (s *scaling) replicas(vdu string, profile vduProfile, level string, scale map[string]int64) (int64, error) {
	n := s.levelReplicas(vdu, profile, level)
	var scaled []string
	for _, aspectID := range slices.Sorted(maps.Keys(s.deltas[vdu])) {
		if to, ok := scale[aspectID]; ok {
			n += s.aspectDelta(vdu, aspectID, to) - s.aspectDelta(vdu, aspectID, s.scaleLevel(level, aspectID))
			scaled = append(scaled, fmt.Sprintf("aspect %s at scale level %d", aspectID, to))
		}
	}
	if n < profile.min || profile.max >= 0 && n > profile.max || n > maxReplicas {
		where := "initially"
		if level != "" {
			where = "at instantiation level " + level
		}
		if len(scaled) > 0 {
			where = "with " + strings.Join(scaled, ", ")
		}
		return 0, fmt.Errorf("VDU %s would have %d instances %s, outside its vdu_profile [%d, %d]", vdu, n, where, profile.min, profile.max)
	}
	return n, nil
}

// levelReplicas returns a VDU's instances at an instantiation level, unchecked.
func (s *scaling) levelReplicas(vdu string, profile vduProfile, level string) int64 {
	n, ok := s.vduLevels[vdu][level]
	if ok && level != "" {
		return n
	}
	n, ok = s.initial[vdu]
	if !ok {
		n = max(profile.min, 1)
	}
	for _, aspectID := range slices.Sorted(maps.Keys(s.deltas[vdu])) {
		n += s.aspectDelta(vdu, aspectID, s.scaleLevel(level, aspectID))
	}
	return n
}

// aspectDelta adds the deltas of the first steps of an aspect for a VDU: step i uses
// step_deltas[i-1], the last entry for the steps past the list.
func (s *scaling) aspectDelta(vdu, aspectID string, steps int64) int64 {
	deltas := s.deltas[vdu][aspectID]
	a := s.aspects[aspectID]
	var total int64
	for i := int64(0); i < steps && i < maxReplicas; i++ {
		name := ""
		switch {
		case len(a.stepDeltas) > 0:
			name = a.stepDeltas[min(int(i), len(a.stepDeltas)-1)]
		case len(deltas) == 1:
			for only := range deltas {
				name = only
			}
		}
		total += deltas[name]
	}
	return total
}

// vduProfile bounds a VDU's instances; max is -1 when unbounded.
type vduProfile struct {
	min, max int64
}

func profileOf(properties map[string]any) vduProfile {
	profile := vduProfile{min: 0, max: -1}
	p := asMap(properties["vdu_profile"])
	if v, ok := p["min_number_of_instances"]; ok {
		profile.min = asInt(v)
	}
	if v, ok := p["max_number_of_instances"]; ok {
		profile.max = asInt(v)
	}
	return profile
}

// AspectStatus is the scale level of a scaling aspect (SOL003 scaleStatus).
type AspectStatus struct {
	ID            string
	ScaleLevel    int64
	MaxScaleLevel int64
	// Reachable is the highest level the aspect can reach: MaxScaleLevel, or lower when
	// a VDU's vdu_profile allows fewer instances (the other aspects at their levels).
	Reachable int64
	// Bound says what sets Reachable.
	Bound string
	// VDUs are the VDUs the aspect scales.
	VDUs []string
}

// checkScale refuses scale levels outside their aspect's [0, max_scale_level] and warns
// of aspects the flavour does not have.
func (s *scaling) checkScale(scale map[string]int64) (warnings []string, err error) {
	for _, id := range slices.Sorted(maps.Keys(scale)) {
		a, ok := s.aspects[id]
		switch {
		case !ok:
			warnings = append(warnings, fmt.Sprintf("spec.scale names aspect %q, which the deployment flavour does not have: ignored", id))
		case scale[id] < 0 || scale[id] > a.maxLevel:
			return warnings, fmt.Errorf("aspect %s: scale level %d is outside [0, %d] (its max_scale_level)", id, scale[id], a.maxLevel)
		}
	}
	return warnings, nil
}

// aspectStatus lists every aspect's scale level at an instantiation level with the
// levels of scale, and how far each can go.
func (s *scaling) aspectStatus(level string, scale map[string]int64, profiles map[string]vduProfile) []AspectStatus {
	var out []AspectStatus
	current := map[string]int64{}
	for id := range s.aspects {
		current[id] = s.scaleLevel(level, id)
		if to, ok := scale[id]; ok {
			current[id] = to
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.aspects)) {
		st := AspectStatus{ID: id, ScaleLevel: current[id], MaxScaleLevel: s.aspects[id].maxLevel, Reachable: s.aspects[id].maxLevel, Bound: "its max_scale_level"}
		for _, vdu := range slices.Sorted(maps.Keys(s.deltas)) {
			if _, ok := s.deltas[vdu][id]; ok {
				st.VDUs = append(st.VDUs, vdu)
			}
		}
		st.Reachable, st.Bound = s.reachable(id, level, current, profiles, st)
		out = append(out, st)
	}
	return out
}

// reachable returns the highest level of an aspect at which every VDU it scales stays
// within its vdu_profile, the other aspects at their levels, and what bounds it.
func (s *scaling) reachable(id, level string, current map[string]int64, profiles map[string]vduProfile, st AspectStatus) (int64, string) {
	blocking := ""
	for to := st.MaxScaleLevel; to >= 0; to-- {
		levels := maps.Clone(current)
		levels[id] = to
		fits := ""
		for _, vdu := range st.VDUs {
			if _, err := s.replicas(vdu, profiles[vdu], level, levels); err != nil {
				fits = vdu
				break
			}
		}
		if fits == "" {
			if blocking == "" {
				return to, st.Bound
			}
			return to, fmt.Sprintf("the vdu_profile of VDU %s (at most %d instances)", blocking, profiles[blocking].max)
		}
		blocking = fits
	}
	return 0, fmt.Sprintf("the vdu_profile of VDU %s", blocking)
}

func asMap(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

func asStrings(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, item := range list {
		if s, ok := item.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func asInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case float64:
		return int64(n)
	case uint64:
		return int64(n)
	}
	return 0
}
