package cli

import (
	"fmt"

	k8svalidation "k8s.io/apimachinery/pkg/util/validation"

	"calaf.io/calaf/tosca"
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

// nameError words the first problem of a name given on the command line on one line (the
// name cut to tosca.MaxEcho characters), nil without problems: mending it shows the next.
func nameError(flag, name string, problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s %s: %s", flag, tosca.Echo(name), problems[0])
}
