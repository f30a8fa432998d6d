package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pollerReader is the cache's client as the kstatus poller reads it, which waits for the
// staged objects of an apply (Namespaces, ClusterRoles, class kinds) by listing their kind
// in pages, with the field selector it was given. The cache refuses both: an empty field
// selector, parsed into one of everything ("non-exact field matches are not supported"),
// and a next page ("continue-not-supported", the token of every list it answers). A
// selector of everything selects nothing out and the cache answers a list whole, so both
// are dropped.
type pollerReader struct {
	client.Client
}

func (p pollerReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	options := (&client.ListOptions{}).ApplyOptions(opts)
	if options.FieldSelector != nil && options.FieldSelector.Empty() {
		options.FieldSelector = nil
	}
	options.Limit, options.Continue, options.Raw = 0, "", nil
	if err := p.Client.List(ctx, list, options); err != nil {
		return err
	}
	list.SetContinue("")
	return nil
}
