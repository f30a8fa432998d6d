package benchmarks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tliron/exturl"
	"github.com/tliron/go-ard"
	"github.com/tliron/puccini/tosca/parser"
	"github.com/tliron/puccini/tosca/parsing"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	"calaf.io/calaf/etsi"
	"calaf.io/calaf/etsi/helmchart"
	"calaf.io/calaf/profiles"
	"calaf.io/calaf/render"
	"calaf.io/calaf/test/benchreport"
	"calaf.io/calaf/tosca"
)

const etsiSectionTitle = "## ETSI VNF packages"

// vduCount is the number of VDUs of the generated manifest package.
const vduCount = 12

// Target of the ETSI path: compile + render of a package against raw Puccini compiling its
// flavour file (the render — resolve, coerce, the ETSI mapping — comes on top).
const maxETSIRatio = 2.0

// writeManifestPackage writes a Tacker-style SOL001 package of n Vdu.Compute VDUs, each a
// Deployment of its manifest file, with two instantiation levels; it returns the package
// directory and the request that lists the manifests.
func writeManifestPackage(tb testing.TB, dir string, n int) (string, *etsi.Request) {
	files := map[string]string{
		"TOSCA-Metadata/TOSCA.meta": "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: bench\nEntry-Definitions: Definitions/top.yaml\n",
		"Definitions/types.yaml": "tosca_definitions_version: tosca_simple_yaml_1_2\nimports: [ " + profiles.SOL001VNFDURL + " ]\nnode_types:\n  bench.VNF:\n    derived_from: tosca.nodes.nfv.VNF\n    properties:\n" +
			"      descriptor_id: { type: string, default: bench }\n      descriptor_version: { type: string, default: '1' }\n      provider: { type: string, default: bench }\n" +
			"      product_name: { type: string, default: bench }\n      software_version: { type: string, default: '1' }\n      vnfm_info: { type: list, entry_schema: { type: string }, default: [ Calaf ] }\n" +
			"      flavour_id: { type: string, default: big }\n      flavour_description: { type: string, default: '' }\n",
		"Definitions/top.yaml": "tosca_definitions_version: tosca_simple_yaml_1_2\nimports: [ " + profiles.SOL001VNFDURL + ", types.yaml, df.yaml ]\n" +
			"topology_template:\n  inputs:\n    selected_flavour: { type: string }\n  node_templates:\n    VNF:\n      type: bench.VNF\n      properties: { flavour_id: { get_input: selected_flavour } }\n",
	}
	var df, levels strings.Builder
	df.WriteString("tosca_definitions_version: tosca_simple_yaml_1_2\nimports: [ " + profiles.SOL001VNFDURL + ", types.yaml ]\n")
	df.WriteString("topology_template:\n  inputs:\n    descriptor_id: { type: string }\n    flavour_id: { type: string }\n")
	df.WriteString("  substitution_mappings: { node_type: bench.VNF, properties: { flavour_id: big } }\n  node_templates:\n    VNF: { type: bench.VNF }\n")
	var defFiles []any
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&df, "    VDU%d:\n      type: tosca.nodes.nfv.Vdu.Compute\n      properties: { name: vdu%d, vdu_profile: { min_number_of_instances: 1, max_number_of_instances: 3 } }\n", i, i)
		fmt.Fprintf(&levels, "  - vdu%d_levels:\n      type: tosca.policies.nfv.VduInstantiationLevels\n      properties: { levels: { small: { number_of_instances: 1 }, large: { number_of_instances: 2 } } }\n      targets: [ VDU%d ]\n", i, i)
		name := fmt.Sprintf("Files/kubernetes/vdu%d.yaml", i)
		files[name] = fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: vdu%d }\nspec:\n  selector: { matchLabels: { app: vdu%d } }\n"+
			"  template:\n    metadata: { labels: { app: vdu%d } }\n    spec: { containers: [ { name: main, image: 'busybox:1.36', command: [ sleep, '3600' ] } ] }\n"+
			"---\napiVersion: v1\nkind: Service\nmetadata: { name: vdu%d }\nspec: { selector: { app: vdu%d }, ports: [ { port: 80 } ] }\n", i, i, i, i, i)
		defFiles = append(defFiles, name)
	}
	df.WriteString("  policies:\n  - levels:\n      type: tosca.policies.nfv.InstantiationLevels\n      properties: { levels: { small: {}, large: {} }, default_level: small }\n")
	df.WriteString(levels.String())
	files["Definitions/df.yaml"] = df.String()
	root := filepath.Join(dir, "manifests12")
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return root, &etsi.Request{FlavourID: "big", InstantiationLevelID: "large", AdditionalParams: map[string]any{"lcm-kubernetes-def-files": defFiles}}
}

// renderETSI compiles and renders a SOL001 package once.
func renderETSI(dir string, req *etsi.Request) error {
	ctx := context.Background()
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	if err != nil {
		return err
	}
	defer pkg.Close()
	compiled, err := tosca.NewCompiler(1).CompileWith(ctx, pkg, nil, tosca.CompileOptions{Flavour: req.FlavourID})
	if err != nil {
		return err
	}
	renderer := render.NewRenderer(1)
	renderer.Charts = helmchart.Engine{}
	_, err = renderer.Render(ctx, compiled, render.Options{Service: "bench", Namespace: "bench", Instantiate: req})
	return err
}

// benchETSIRender measures what Calaf does with a SOL001 package it has not seen: open,
// compile of the chosen flavour, render (resolve, coerce, the ETSI mapping).
func benchETSIRender(dir string, req *etsi.Request) func(*testing.B) {
	return func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := renderETSI(dir, req); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchRawFlavour measures raw Puccini compiling the flavour file itself, given the inputs
// the VNF node would feed it (quirks as Calaf sets them for ETSI packages).
func benchRawFlavour(flavourFile string, inputs map[string]ard.Value) func(*testing.B) {
	return func(b *testing.B) {
		imports, err := profiles.Imports()
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < b.N; i++ {
			urlContext := exturl.NewContext()
			for public, internal := range imports {
				urlContext.Map(public, internal)
			}
			url, err := urlContext.NewValidFileURL(flavourFile)
			if err != nil {
				b.Fatal(err)
			}
			parserContext := parser.NewParser().NewContext()
			parserContext.URL = url
			parserContext.Inputs = inputs
			parserContext.Quirks = parsing.NewQuirks(string(parsing.QuirkImportsVersionPermissive), string(parsing.QuirkInterfacesOperationsPermissive), string(parsing.QuirkCapabilitiesOccurrencesPermissive))
			serviceTemplate, err := parserContext.Parse(context.Background())
			if err != nil || !parserContext.GetProblems().Empty() {
				b.Fatal(err, parserContext.GetProblems())
			}
			if _, err := serviceTemplate.Compile(); err != nil {
				b.Fatal(err)
			}
			urlContext.Release()
		}
	}
}

// benchHelmTemplate measures `helm template` of a chart done with the SDK directly.
func benchHelmTemplate(chartDir string, values map[string]any) func(*testing.B) {
	return func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ch, err := loader.LoadDir(chartDir)
			if err != nil {
				b.Fatal(err)
			}
			renderValues, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "bench", Namespace: "bench", Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities.Copy())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := engine.Render(ch, renderValues); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// etsiRow is one measured comparison.
type etsiRow struct {
	what, baseline string
	calaf, base    time.Duration
}

// interleaved runs a measure and its baseline alternately, rounds times each, and keeps
// the median of each.
func interleaved(measure, baseline func(*testing.B)) (time.Duration, time.Duration) {
	var m, b []testing.BenchmarkResult
	for r := 0; r < *rounds; r++ {
		if r%2 == 0 {
			b = append(b, testing.Benchmark(baseline))
			m = append(m, testing.Benchmark(measure))
		} else {
			m = append(m, testing.Benchmark(measure))
			b = append(b, testing.Benchmark(baseline))
		}
	}
	return median(m), median(b)
}

// TestETSIReport measures compile + render of a 12-VDU manifest package and of the Helm
// test package against same-run baselines — raw Puccini compiling the flavour file, and
// the Helm SDK rendering the chart — and writes the "ETSI VNF packages" section of the
// -report file. It fails when the target is missed.
func TestETSIReport(t *testing.T) {
	if *report == "" {
		t.Skip("writes docs/benchmarks.md when run by make bench (-report)")
	}
	dir, req := writeManifestPackage(t, t.TempDir(), vduCount)
	if err := renderETSI(dir, req); err != nil {
		t.Fatalf("the %d-VDU package: %v", vduCount, err)
	}
	flavourInputs := map[string]ard.Value{"descriptor_id": "bench", "flavour_id": "big"}
	manifests, raw := interleaved(benchETSIRender(dir, req), benchRawFlavour(filepath.Join(dir, "Definitions/df.yaml"), flavourInputs))

	helmPkg := "../etsi/cnf-helm"
	helmReq := &etsi.Request{FlavourID: "simple", InstantiationLevelID: "instantiation_level_2", AdditionalParams: map[string]any{
		"helm_chart_path":  "Files/kubernetes/hello-chart",
		"helm_value_names": map[string]any{"VDU1": map[string]any{"replica": "replicaCountVdu1"}, "VDU2": map[string]any{"replica": "replicaCountVdu2"}},
	}}
	helmFlavour, _ := filepath.Abs(filepath.Join(helmPkg, "Definitions/helm_df_simple.yaml"))
	helmCalaf, helmRaw := interleaved(benchETSIRender(helmPkg, helmReq), benchRawFlavour(helmFlavour, map[string]ard.Value{"flavour_id": "simple"}))
	var sdkRounds []testing.BenchmarkResult
	for r := 0; r < *rounds; r++ {
		sdkRounds = append(sdkRounds, testing.Benchmark(benchHelmTemplate(filepath.Join(helmPkg, "Files/kubernetes/hello-chart"), map[string]any{"replicaCountVdu1": 2, "replicaCountVdu2": 3})))
	}
	sdk := median(sdkRounds)

	rows := []etsiRow{
		{fmt.Sprintf("%d-VDU manifest package (%d manifests): open, compile the flavour, render with the ETSI mapping", vduCount, vduCount), "raw Puccini compiling the flavour file", manifests, raw},
		{"Helm package (2 VDUs, chart rendered in-process): open, compile the flavour, render, Helm template", "raw Puccini compiling the flavour file", helmCalaf, helmRaw},
		{"the same Helm package", "`helm template` of its chart with the Helm SDK alone", helmCalaf, sdk},
	}
	section := etsiMarkdown(rows)
	if err := benchreport.WriteBenchmark(*report, section); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s:\n%s", *report, section)
	for _, r := range rows {
		if r.calaf <= 0 || r.base <= 0 {
			t.Errorf("%s: a benchmark failed (%v, %v)", r.what, r.calaf, r.base)
		}
	}
	for _, r := range rows[:2] {
		if ratio := float64(r.calaf) / float64(r.base); ratio > maxETSIRatio {
			t.Errorf("%s: %.2f× %s, more than %.1f×", r.what, ratio, r.baseline, maxETSIRatio)
		}
	}
}

func etsiMarkdown(rows []etsiRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", etsiSectionTitle)
	fmt.Fprintf(&b, "Written by `make bench` (test/benchmarks, TestETSIReport) on %s: %s, %s/%s, %d CPUs, %s; load average at the end %s.\n\n",
		time.Now().UTC().Format("2006-01-02"), benchreport.CPUModel(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), benchreport.LoadAverage())
	fmt.Fprintf(&b, "Each measure and its baseline run interleaved, %d rounds each of `testing.Benchmark`; the median round of each is shown (ns/op). Calaf's side includes the render — resolve, coerce, the ETSI mapping (manifests read, VDUs bound, replicas set) — which the raw compile does not do.\n\n", *rounds)
	b.WriteString("| measure | Calaf | same-run baseline | ratio |\n|---|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s: %s | %.2f× |\n", r.what, r.calaf.Round(10*time.Microsecond), r.baseline, r.base.Round(10*time.Microsecond), float64(r.calaf)/float64(r.base))
	}
	worst := 0.0
	for _, r := range rows[:2] {
		worst = max(worst, float64(r.calaf)/float64(r.base))
	}
	fmt.Fprintf(&b, "\nThe Helm SDK alone is shown for scale: the chart's part of the work is small next to the TOSCA compile.\n\nTargets:\n\n- compile + render ≤ %.1f× raw Puccini compiling the flavour file — %s (worst %.2f×).\n",
		maxETSIRatio, benchreport.Verdict(worst <= maxETSIRatio), worst)
	return b.String()
}
