package cli

import (
	"context"
	"fmt"
	"html"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"calaf.io/calaf/render"
)

func newGraphCommand() *cobra.Command {
	return packageCommand{
		use:     "graph",
		short:   "Draw the topology of a TOSCA package: DOT, SVG, or a self-contained HTML page",
		formats: []string{"dot", "svg", "html"},
		render:  true,
		run: func(_ context.Context, cmd *cobra.Command, f *packageFlags, c *compiled, result *render.Result) error {
			title := strings.TrimSuffix(c.pkg.Entry, ".yaml")
			switch f.output {
			case "dot":
				return writeDOT(cmd.OutOrStdout(), title, result)
			case "svg":
				return writeSVG(cmd.OutOrStdout(), result)
			default:
				return writeHTML(cmd.OutOrStdout(), title, result)
			}
		},
	}.command()
}

// writeDOT writes the topology as a Graphviz digraph: node templates with their type and
// objects, relationships as edges from the requiring node to its target.
func writeDOT(w io.Writer, title string, result *render.Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %q {\n  rankdir=BT;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n", title)
	for _, node := range result.Nodes {
		label := node.Name + "\n" + node.Type
		for _, obj := range node.Objects {
			label += "\n" + obj.GetKind() + "/" + obj.GetName()
		}
		fmt.Fprintf(&b, "  %q [label=%q, fillcolor=%q];\n", node.Name, label, nodeColor(node))
	}
	for _, node := range result.Nodes {
		for _, r := range node.Relationships {
			style := "solid"
			if !slices.Contains(node.DependsOn, r.Target) {
				style = "dashed"
			}
			fmt.Fprintf(&b, "  %q -> %q [label=%q, style=%s];\n", node.Name, r.Target, r.Requirement, style)
		}
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// nodeColor colors a node by what it renders.
func nodeColor(node *render.Node) string {
	has := func(t string) bool { return slices.Contains(node.Types, t) }
	switch {
	case has("calaf.nodes.Workload"):
		return "#cfe8ff"
	case has("calaf.nodes.Service"):
		return "#d8f5d0"
	case has("calaf.nodes.ConfigMap"), has("calaf.nodes.Secret"):
		return "#fff2c2"
	case has("calaf.nodes.Volume"):
		return "#f3dcff"
	case has("calaf.nodes.Manifests"):
		return "#ffe0cc"
	}
	return "#eeeeee"
}

const (
	boxWidth  = 230
	boxHeight = 58
	gapX      = 40
	gapY      = 70
	margin    = 30
)

type placed struct {
	node *render.Node
	x, y int
}

// layout places nodes in layers: the targets of relationships above the nodes requiring
// them, each layer ordered to keep edges short.
func layout(result *render.Result) (map[string]*placed, int, int) {
	level := map[string]int{}
	var depth func(name string, seen map[string]bool) int
	depth = func(name string, seen map[string]bool) int {
		if l, ok := level[name]; ok {
			return l
		}
		if seen[name] {
			return 0
		}
		seen[name] = true
		l := 0
		if node := result.Node(name); node != nil {
			for _, r := range node.Relationships {
				if r.Target != name {
					l = max(l, depth(r.Target, seen)+1)
				}
			}
		}
		level[name] = l
		return l
	}
	layers := map[int][]*render.Node{}
	maxLevel := 0
	for _, node := range result.Nodes {
		l := depth(node.Name, map[string]bool{})
		layers[l] = append(layers[l], node)
		maxLevel = max(maxLevel, l)
	}
	positions := map[string]*placed{}
	width := 0
	for l := 0; l <= maxLevel; l++ {
		nodes := layers[l]
		order := map[string]float64{}
		for i, node := range nodes {
			order[node.Name] = float64(i)
			sum, count := 0.0, 0
			for _, r := range node.Relationships {
				if p, ok := positions[r.Target]; ok {
					sum += float64(p.x)
					count++
				}
			}
			if count > 0 {
				order[node.Name] = sum / float64(count)
			} else {
				order[node.Name] = float64(i) * (boxWidth + gapX)
			}
		}
		sort.SliceStable(nodes, func(i, j int) bool { return order[nodes[i].Name] < order[nodes[j].Name] })
		for i, node := range nodes {
			positions[node.Name] = &placed{node: node, x: margin + i*(boxWidth+gapX), y: margin + l*(boxHeight+gapY)}
		}
		width = max(width, margin*2+len(nodes)*(boxWidth+gapX)-gapX)
	}
	height := margin*2 + (maxLevel+1)*(boxHeight+gapY) - gapY
	return positions, width, height
}

// writeSVG draws the topology as a standalone SVG picture.
func writeSVG(w io.Writer, result *render.Result) error {
	positions, width, height := layout(result)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n", width, height, width, height)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>` + "\n")
	for _, node := range result.Nodes {
		from := positions[node.Name]
		for _, r := range node.Relationships {
			to, ok := positions[r.Target]
			if !ok {
				continue
			}
			x1, y1 := from.x+boxWidth/2, from.y
			x2, y2 := to.x+boxWidth/2, to.y+boxHeight
			dash := ""
			if !slices.Contains(node.DependsOn, r.Target) {
				dash = ` stroke-dasharray="5,4"`
			}
			fmt.Fprintf(&b, `<path d="M%d,%d C%d,%d %d,%d %d,%d" fill="none" stroke="#555" stroke-width="1.4"%s marker-end="url(#arrow)"><title>%s → %s (%s)</title></path>`+"\n",
				x1, y1, x1, (y1+y2)/2, x2, (y1+y2)/2, x2, y2, dash, esc(node.Name), esc(r.Target), esc(r.Type))
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#333" text-anchor="middle">%s</text>`+"\n", (x1+x2)/2+6, (y1+y2)/2, esc(r.Requirement))
		}
	}
	for _, node := range result.Nodes {
		p := positions[node.Name]
		var objects []string
		for _, obj := range node.Objects {
			objects = append(objects, obj.GetKind())
		}
		fmt.Fprintf(&b, `<g><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" rx="9" fill="%s" stroke="#446"/>`,
			esc(node.Name+": "+node.Type), p.x, p.y, boxWidth, boxHeight, nodeColor(node))
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" font-weight="bold" text-anchor="middle">%s</text>`, p.x+boxWidth/2, p.y+20, esc(node.Name))
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="middle" fill="#333">%s</text>`, p.x+boxWidth/2, p.y+36, esc(node.Type))
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" text-anchor="middle" fill="#666">%s</text></g>`+"\n", p.x+boxWidth/2, p.y+50, esc(strings.Join(objects, ", ")))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHTML wraps the SVG picture and a table of the nodes in a self-contained page.
func writeHTML(w io.Writer, title string, result *render.Result) error {
	var svg strings.Builder
	if err := writeSVG(&svg, result); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s — Calaf topology</title>\n", esc(title))
	b.WriteString("<style>body{font-family:Helvetica,Arial,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin-top:2em}td,th{border:1px solid #ccc;padding:4px 10px;text-align:left;font-size:13px}th{background:#f4f4f4}</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n%s", esc(title), svg.String())
	b.WriteString("<table><tr><th>node template</th><th>type</th><th>depends on</th><th>objects</th><th>operations</th></tr>\n")
	for _, node := range result.Nodes {
		var objects, operations []string
		for _, obj := range node.Objects {
			objects = append(objects, obj.GetKind()+"/"+obj.GetName())
		}
		for _, op := range node.Operations {
			operations = append(operations, op.QualifiedName())
		}
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", esc(node.Name), esc(node.Type),
			esc(strings.Join(node.DependsOn, ", ")), esc(strings.Join(objects, ", ")), esc(strings.Join(operations, ", ")))
	}
	b.WriteString("</table></body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func esc(s string) string { return html.EscapeString(s) }
