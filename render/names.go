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

// separators are the characters of TOSCA names that object names spell as "-" without
// losing track of the name: "user_db" and "user.db" become "user-db".
var separators = strings.NewReplacer("_", "-", ".", "-")

// ObjectName returns the Kubernetes name of the objects of a node template of a Service:
// "<service>-<node>" as a DNS label. A name that is too long, or that loses more than case
// and separators (spaces, non-ASCII letters...), gets a hash suffix so that different node
// templates never share a name.
func ObjectName(service, node string) string {
	plain := strings.ToLower(service + "-" + node)
	name := strings.Trim(invalidNameChars.ReplaceAllString(plain, "-"), "-")
	seed := service + "\x00" + node
	lossy := name != strings.Trim(separators.Replace(plain), "-")
	if lossy || strings.Trim(invalidNameChars.ReplaceAllString(strings.ToLower(node), "-"), "-") == "" {
		return withHash(name, seed)
	}
	return shorten(name, seed)
}

// LabelValue turns a node template name into a valid label value: the name itself when it
// is one, else the name with its invalid characters replaced and a hash suffix, so that
// different node templates never share a value.
func LabelValue(node string) string {
	if node == "" {
		return ""
	}
	value := strings.Trim(invalidLabelChars.ReplaceAllString(node, "-"), "-._")
	if value == node {
		return shorten(value, node)
	}
	return withHash(value, node)
}

func shorten(name, seed string) string {
	if len(name) <= maxNameLength {
		return name
	}
	return withHash(name, seed)
}

// withHash ends name (cut to fit) with "-" and 8 hex digits of the hash of seed.
func withHash(name, seed string) string {
	sum := sha256.Sum256([]byte(seed))
	suffix := hex.EncodeToString(sum[:])[:8]
	name = strings.TrimRight(name[:min(len(name), maxNameLength-9)], "-._")
	if name == "" {
		return suffix
	}
	return name + "-" + suffix
}
