package render

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

const maxNameLength = 63

var invalidNameChars = regexp.MustCompile(`[^a-z0-9-]+`)
var invalidLabelChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// ObjectName returns the Kubernetes name of the objects of a node template of a Service:
// "<service>-<node>" as a DNS label, shortened with a hash suffix when too long.
func ObjectName(service, node string) string {
	name := strings.Trim(invalidNameChars.ReplaceAllString(strings.ToLower(service+"-"+node), "-"), "-")
	return shorten(name, service+"\x00"+node)
}

// LabelValue turns a node template name into a valid label value.
func LabelValue(node string) string {
	value := strings.Trim(invalidLabelChars.ReplaceAllString(node, "-"), "-._")
	if value == node {
		return value
	}
	return shorten(value, node)
}

func shorten(name, seed string) string {
	if len(name) <= maxNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(seed))
	return strings.TrimRight(name[:maxNameLength-9], "-._") + "-" + hex.EncodeToString(sum[:])[:8]
}
