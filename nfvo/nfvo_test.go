package nfvo_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"calaf.io/calaf/internal/outbound"
	"calaf.io/calaf/nfvo"
	"calaf.io/calaf/nfvo/nfvostub"
)

func client(t *testing.T, stub *nfvostub.Stub, allow bool) *nfvo.Client {
	t.Helper()
	server := httptest.NewServer(stub)
	t.Cleanup(server.Close)
	root, _ := url.Parse(server.URL)
	var policy outbound.Policy
	if allow {
		policy.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}
	return &nfvo.Client{Root: root, HTTP: outbound.New(outbound.Options{Policy: policy}), Auth: outbound.Auth{Bearer: "vnfm-token"}, Poll: time.Millisecond}
}

func request() nfvo.GrantRequest {
	return nfvo.GrantRequest{VnfInstanceID: "i1", VnfLcmOpOccID: "o1", VnfdID: "d1", Operation: "SCALE"}
}

func TestGrants(t *testing.T) {
	ctx := context.Background()
	stub := &nfvostub.Stub{Token: "vnfm-token"}
	g, err := client(t, stub, true).Grant(ctx, request())
	if err != nil || g.ID != "grant-1" {
		t.Fatalf("a synchronous grant: %+v, %v", g, err)
	}
	later := &nfvostub.Stub{Later: 3}
	if g, err := client(t, later, true).Grant(ctx, request()); err != nil || g.ID != "grant-1" {
		t.Fatalf("an asynchronous grant: %+v, %v", g, err)
	}
	refusing := &nfvostub.Stub{Refuse: func(r nfvo.GrantRequest) string { return "no capacity for " + r.Operation }}
	_, err = client(t, refusing, true).Grant(ctx, request())
	var refused *nfvo.RefusedError
	if !errors.As(err, &refused) || refused.Status != 403 || !strings.Contains(refused.Detail, "no capacity for SCALE") {
		t.Fatalf("a refused grant: %v", err)
	}
	wrongToken := &nfvostub.Stub{Token: "other"}
	if _, err := client(t, wrongToken, true).Grant(ctx, request()); !errors.As(err, &refused) || refused.Status != 401 {
		t.Fatalf("a grant with the wrong token: %v", err)
	}
	var blocked *outbound.RefusedError
	if _, err := client(t, stub, false).Grant(ctx, request()); !errors.As(err, &blocked) {
		t.Fatalf("an NFVO on loopback without the admin's allowlist was reached: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	never := &nfvostub.Stub{Later: 1 << 30}
	if _, err := client(t, never, true).Grant(short, request()); err == nil || !strings.Contains(err.Error(), "had not decided") {
		t.Fatalf("a grant never decided: %v", err)
	}
	if got := stub.Requests(); len(got) != 1 || got[0].Operation != "SCALE" || got[0].VnfdID != "d1" {
		t.Errorf("the NFVO got %+v", got)
	}
}

func TestPackageContent(t *testing.T) {
	stub := &nfvostub.Stub{Packages: map[string][]byte{"d1": []byte("PK-zip")}}
	c := client(t, stub, true)
	r, err := c.PackageContent(context.Background(), "d1", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(r)
	r.Close()
	if string(data) != "PK-zip" {
		t.Errorf("content %q", data)
	}
	if _, err := c.PackageContent(context.Background(), "nosuch", 1<<20); err == nil || !strings.Contains(err.Error(), "no package of VNFD nosuch") {
		t.Errorf("a package the NFVO does not have: %v", err)
	}
	r, _ = c.PackageContent(context.Background(), "d1", 3)
	data, _ = io.ReadAll(r)
	if len(data) != 3 {
		t.Errorf("the limit let %d bytes through", len(data))
	}
}
