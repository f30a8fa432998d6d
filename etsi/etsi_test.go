package etsi

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"
	"testing"
)

// Tacker's parameter files are JSON with trailing commas, or YAML; both read alike.
func TestParseRequest(t *testing.T) {
	json := []byte(`{
  "flavourId": "simple",
  "instantiationLevelId": "instantiation_level_1",
  "extVirtualLinks": [ { "id": "net0", }, ],
  "additionalParams": {
    "lcm-kubernetes-def-files": [ "Files/kubernetes/a.yaml", "Files/kubernetes/b.yaml", ],
    "helm_value_names": { "VDU1": { "replica": "replicas" } },
    "text": "a,}",
  },
}`)
	yaml := []byte("flavourId: simple\ninstantiationLevelId: instantiation_level_1\nextVirtualLinks: [ { id: net0 } ]\nadditionalParams:\n  lcm-kubernetes-def-files: [ Files/kubernetes/a.yaml, Files/kubernetes/b.yaml ]\n  helm_value_names: { VDU1: { replica: replicas } }\n  text: 'a,}'\n")
	for name, data := range map[string][]byte{"json": json, "yaml": yaml} {
		req, err := ParseRequest(name, data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, err := req.params()
		if err != nil {
			t.Fatal(err)
		}
		if req.FlavourID != "simple" || req.InstantiationLevelID != "instantiation_level_1" || len(req.ExtVirtualLinks) != 1 ||
			strings.Join(p.defFiles, ",") != "Files/kubernetes/a.yaml,Files/kubernetes/b.yaml" || p.helmValueNames["VDU1"] != "replicas" ||
			req.AdditionalParams["text"] != "a,}" {
			t.Errorf("%s: read %+v (params %+v)", name, req, p)
		}
		if w := req.Warnings(); len(w) != 1 || !strings.Contains(w[0], "extVirtualLinks (1) are ignored") {
			t.Errorf("%s: warnings %v", name, w)
		}
	}
	if _, err := ParseRequest("bad.json", []byte("{\n\"flavourId\": 3\n}")); err == nil || !strings.Contains(err.Error(), "flavourId: is json.Number, not a string") && !strings.Contains(err.Error(), "not a string") {
		t.Errorf("a flavourId that is no string: %v", err)
	}
}

// The replicas of a VDU follow the level's entry, else the initial delta plus the deltas
// of its aspects' steps, within the VDU's profile.
func TestReplicas(t *testing.T) {
	policies := []Policy{
		{Types: []string{policyScalingAspects}, Properties: map[string]any{"aspects": map[string]any{
			"a": map[string]any{"max_scale_level": int64(3), "step_deltas": []any{"first", "next"}}}}},
		{Types: []string{policyAspectDeltas}, Targets: []string{"vdu"}, Properties: map[string]any{"aspect": "a", "deltas": map[string]any{
			"first": map[string]any{"number_of_instances": int64(2)}, "next": map[string]any{"number_of_instances": int64(1)}}}},
		{Types: []string{policyInitialDelta}, Targets: []string{"vdu"}, Properties: map[string]any{"initial_delta": map[string]any{"number_of_instances": int64(1)}}},
		{Types: []string{policyLevels}, Properties: map[string]any{"default_level": "zero", "levels": map[string]any{
			"zero": map[string]any{}, "two": map[string]any{"scale_info": map[string]any{"a": map[string]any{"scale_level": int64(2)}}},
			"three": map[string]any{"scale_info": map[string]any{"a": map[string]any{"scale_level": int64(3)}}}, "fixed": map[string]any{}}}},
		{Types: []string{policyVduLevels}, Targets: []string{"vdu"}, Properties: map[string]any{"levels": map[string]any{"fixed": map[string]any{"number_of_instances": int64(5)}}}},
	}
	s := readScaling(policies)
	profile := vduProfile{min: 1, max: 5}
	for _, c := range []struct {
		level string
		want  int64
		err   string
	}{
		{"zero", 1, ""}, {"two", 4, ""}, {"three", 5, ""}, {"fixed", 5, ""},
		{"", 1, ""},
	} {
		level, err := s.level(c.level)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.replicas("vdu", profile, level, nil)
		if err != nil || got != c.want {
			t.Errorf("level %q: %d, %v; want %d", c.level, got, err, c.want)
		}
	}
	if _, err := s.replicas("vdu", vduProfile{min: 1, max: 3}, "three", nil); err == nil || !strings.Contains(err.Error(), "would have 5 instances at instantiation level three, outside its vdu_profile [1, 3]") {
		t.Errorf("out of profile: %v", err)
	}
	if _, err := s.level("huge"); err == nil || !strings.Contains(err.Error(), "its levels: fixed, three, two, zero") {
		t.Errorf("unknown level: %v", err)
	}
}

// Scale levels (SOL003 scale) override the instantiation level's: the level's instances
// plus the deltas between the level's scale level and the new one, within the profile;
// the aspect's status says how far it can go and what bounds it.
func TestScaleLevels(t *testing.T) {
	policies := []Policy{
		{Types: []string{policyScalingAspects}, Properties: map[string]any{"aspects": map[string]any{
			"a": map[string]any{"max_scale_level": int64(3), "step_deltas": []any{"first", "next"}}}}},
		{Types: []string{policyAspectDeltas}, Targets: []string{"vdu"}, Properties: map[string]any{"aspect": "a", "deltas": map[string]any{
			"first": map[string]any{"number_of_instances": int64(2)}, "next": map[string]any{"number_of_instances": int64(1)}}}},
		{Types: []string{policyInitialDelta}, Targets: []string{"vdu"}, Properties: map[string]any{"initial_delta": map[string]any{"number_of_instances": int64(1)}}},
		{Types: []string{policyLevels}, Properties: map[string]any{"default_level": "zero", "levels": map[string]any{
			"zero": map[string]any{}, "fixed": map[string]any{"scale_info": map[string]any{"a": map[string]any{"scale_level": int64(1)}}}}}},
		{Types: []string{policyVduLevels}, Targets: []string{"vdu"}, Properties: map[string]any{"levels": map[string]any{"fixed": map[string]any{"number_of_instances": int64(4)}}}},
	}
	s := readScaling(policies)
	profile := vduProfile{min: 1, max: 4}
	for _, c := range []struct {
		level string
		scale map[string]int64
		want  int64
	}{
		{"zero", map[string]int64{"a": 0}, 1}, {"zero", map[string]int64{"a": 1}, 3}, {"zero", map[string]int64{"a": 2}, 4},
		// At "fixed" (4 instances at scale level 1), scale level 0 takes the first delta off.
		{"fixed", map[string]int64{"a": 0}, 2}, {"fixed", map[string]int64{"a": 1}, 4},
		{"zero", map[string]int64{"unknown": 2}, 1},
	} {
		got, err := s.replicas("vdu", profile, c.level, c.scale)
		if err != nil || got != c.want {
			t.Errorf("level %q, scale %v: %d, %v; want %d", c.level, c.scale, got, err, c.want)
		}
	}
	if _, err := s.replicas("vdu", profile, "zero", map[string]int64{"a": 3}); err == nil || !strings.Contains(err.Error(), "would have 5 instances with aspect a at scale level 3, outside its vdu_profile [1, 4]") {
		t.Errorf("past the profile: %v", err)
	}
	if _, err := s.checkScale(map[string]int64{"a": 4}); err == nil || !strings.Contains(err.Error(), "aspect a: scale level 4 is outside [0, 3] (its max_scale_level)") {
		t.Errorf("past max_scale_level: %v", err)
	}
	if w, err := s.checkScale(map[string]int64{"gone": 1}); err != nil || len(w) != 1 || !strings.Contains(w[0], `aspect "gone"`) {
		t.Errorf("unknown aspect: %v, %v", w, err)
	}
	status := s.aspectStatus("zero", map[string]int64{"a": 1}, map[string]vduProfile{"vdu": profile})
	if len(status) != 1 || status[0].ScaleLevel != 1 || status[0].MaxScaleLevel != 3 || status[0].Reachable != 2 ||
		status[0].Bound != "the vdu_profile of VDU vdu (at most 4 instances)" || fmt.Sprint(status[0].VDUs) != "[vdu]" {
		t.Errorf("aspect status: %+v", status)
	}
	status = s.aspectStatus("zero", nil, map[string]vduProfile{"vdu": {min: 1, max: -1}})
	if status[0].Reachable != 3 || status[0].Bound != "its max_scale_level" {
		t.Errorf("unbounded profile: %+v", status)
	}
}

func tgz(t *testing.T, files map[string][]byte) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// A chart archive that decompresses beyond the bound is refused while it is read.
func TestChartArchiveBomb(t *testing.T) {
	data := tgz(t, map[string][]byte{"bomb/Chart.yaml": []byte("apiVersion: v2\nname: bomb\nversion: 1.0.0\n"), "bomb/templates/zeros.yaml": make([]byte, maxChartBytes+10)})
	if _, err := chartArchiveFiles(data); err == nil || !strings.Contains(err.Error(), "decompresses to more than") {
		t.Errorf("bomb: %v", err)
	}
	files, err := chartArchiveFiles(tgz(t, map[string][]byte{"ok/Chart.yaml": []byte("apiVersion: v2\nname: ok\nversion: 1.0.0\n"), "ok/templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: { name: x }\n")}))
	if err != nil || len(files) != 2 {
		t.Fatalf("a good archive: %v (%d files)", err, len(files))
	}
}
