//go:build !calaf_offline

package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/cmmode"
)

// newConvertCommand turns Services and Operations written as custom resources into the
// ConfigMaps of ConfigMap mode, or back (docs/configmap-mode.md).
func newConvertCommand() *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "convert FILE|-",
		Short: "Turn Service and Operation manifests into ConfigMap mode's ConfigMaps (--to configmap) or back (--to crd)",
		Long: "Reads YAML documents from FILE (- for standard input) and writes them to standard output: each Service and Operation " +
			"turned into the labelled ConfigMap that stands for it (--to configmap), or each such ConfigMap into the custom resource " +
			"(--to crd); every other document unchanged. Each converted object is validated with the CRD's schema and rules first: " +
			"one the API server would refuse is refused with its message.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to != "configmap" && to != "crd" {
				return usageError{fmt.Errorf("--to %s: want configmap or crd", to)}
			}
			in, err := openInput(cmd, args[0])
			if err != nil {
				return err
			}
			defer in.Close()
			schemas, err := cmmode.NewSchemas()
			if err != nil {
				return err
			}
			return convertDocuments(cmd, schemas, in, args[0], to == "configmap")
		},
	}
	cmd.Flags().StringVar(&to, "to", "configmap", "what to turn the documents into: configmap or crd")
	return cmd
}

func openInput(cmd *cobra.Command, name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(cmd.InOrStdin()), nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, usageError{err}
	}
	return f, nil
}

// convertDocuments converts each document of in and writes them, separated by ---.
func convertDocuments(cmd *cobra.Command, schemas *cmmode.Schemas, in io.Reader, name string, toConfigMap bool) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	out := cmd.OutOrStdout()
	for n := 1; ; n++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", name, n, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		converted, err := convertDocument(cmd, schemas, doc, toConfigMap)
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", name, n, err)
		}
		if _, err := fmt.Fprintf(out, "---\n%s", converted); err != nil {
			return err
		}
	}
}

// convertDocument converts one document, or returns it as it is when it is not of the
// form converted.
func convertDocument(cmd *cobra.Command, schemas *cmmode.Schemas, doc []byte, toConfigMap bool) ([]byte, error) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
		return nil, err
	}
	gvk := obj.GroupVersionKind()
	switch {
	case toConfigMap && gvk.Group == v1alpha1.GroupVersion.Group && (gvk.Kind == "Service" || gvk.Kind == "Operation"):
		cm, err := schemas.ToConfigMap(cmd.Context(), obj)
		if err != nil {
			return nil, err
		}
		return yaml.Marshal(cm)
	case !toConfigMap && gvk.Group == "" && gvk.Kind == "ConfigMap" && obj.GetLabels()[cmmode.LabelKind] != "":
		cm := &corev1.ConfigMap{}
		if err := yaml.Unmarshal(doc, cm); err != nil {
			return nil, err
		}
		if cmmode.KindOf(cm) == "" {
			return doc, nil // a companion, or another kind's
		}
		cr, err := schemas.FromConfigMap(cmd.Context(), cm)
		if err != nil {
			return nil, err
		}
		return yaml.Marshal(cr.Object)
	}
	return doc, nil
}
