package cli

import (
	"fmt"
	"strings"

	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
)

// checkServiceName refuses a Service name that the API server would refuse (an object
// name, RFC 1123 subdomain) or that cannot be a label value (calaf.io/service labels every
// object of the Service), before anything reads a package for it.
func checkServiceName(flag, name string) error {
	problems := append(k8svalidation.IsDNS1123Subdomain(name), k8svalidation.IsValidLabelValue(name)...)
	return nameError(flag, name, problems)
}

// checkNamespace refuses a namespace name that is no RFC 1123 label.
func checkNamespace(flag, name string) error {
	return nameError(flag, name, k8svalidation.IsDNS1123Label(name))
}

// nameError words the problems of a name given on the command line on one line, nil
// without problems.
func nameError(flag, name string, problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var unique []string
	for _, p := range problems {
		if !seen[p] {
			seen[p] = true
			unique = append(unique, p)
		}
	}
	return fmt.Errorf("%s %q: %s", flag, name, strings.Join(unique, "; "))
}
