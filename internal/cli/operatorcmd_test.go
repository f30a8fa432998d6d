//go:build !calaf_offline

package cli

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
)

// TestOperatorAPIClientCompression checks what the operator's API client asks of the API
// server, on the requests it really sends: no compressed responses by default (gzip costs
// the API server and the operator CPU for every response and watch event), compressed
// ones with --kube-api-compression.
func TestOperatorAPIClientCompression(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"APIVersions","versions":["v1"]}`))
	}))
	defer server.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--kube-api-compression"}, "gzip"},
		{[]string{"--kube-api-compression=false"}, ""},
	} {
		var f apiClientFlags
		flags := pflag.NewFlagSet("operator", pflag.ContinueOnError)
		f.register(flags)
		if err := flags.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		config := &rest.Config{Host: server.URL}
		if err := f.configure(config); err != nil {
			t.Fatal(err)
		}
		if config.QPS != 100 || config.Burst != 300 || config.UserAgent != "calaf-operator" {
			t.Errorf("%v: QPS %g, burst %d, user agent %q", tc.args, config.QPS, config.Burst, config.UserAgent)
		}
		client, err := rest.HTTPClientFor(config)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Get(server.URL + "/api")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		mu.Lock()
		got := seen[len(seen)-1]
		mu.Unlock()
		if got != tc.want {
			t.Errorf("%v: the request said Accept-Encoding %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestOperatorAPIClientConnections checks that the operator keeps its connections to an
// API server reached in plain HTTP (a local proxy) for its concurrent requests, as it does
// over TLS, instead of opening new ones all the time (Go's default transport keeps 2), and
// that over TLS it leaves client-go's own transport alone and still asks for no gzip.
func TestOperatorAPIClientConnections(t *testing.T) {
	const concurrent, rounds = 8, 3
	var mu sync.Mutex
	opened := 0
	encodings := map[string]int{}
	// Every request of a round waits for the others: the round's requests are in flight
	// at once, so each needs a connection of its own.
	var inRound sync.WaitGroup
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		encodings[r.Header.Get("Accept-Encoding")]++
		mu.Unlock()
		inRound.Done()
		inRound.Wait()
		_, _ = w.Write([]byte(`{}`))
	})
	countNew := func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			mu.Lock()
			opened++
			mu.Unlock()
		}
	}
	plain := httptest.NewUnstartedServer(handler)
	plain.Config.ConnState = countNew
	plain.Start()
	defer plain.Close()
	secure := httptest.NewUnstartedServer(handler)
	secure.Config.ConnState = countNew
	secure.StartTLS()
	defer secure.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw})

	for _, tc := range []struct {
		name   string
		config *rest.Config
	}{
		{"plain HTTP", &rest.Config{Host: plain.URL}},
		{"TLS", &rest.Config{Host: secure.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}},
	} {
		mu.Lock()
		opened, encodings = 0, map[string]int{}
		mu.Unlock()
		if err := (apiClientFlags{qps: 100, burst: 300}).configure(tc.config); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		client, err := rest.HTTPClientFor(tc.config)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// returned counts the connections handed back to the client's pool (or closed,
		// when the pool is full): a round starts when the last one's all are back.
		var returned atomic.Int32
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{PutIdleConn: func(error) { returned.Add(1) }})
		for round := range rounds {
			if round == 1 {
				mu.Lock()
				opened = 0 // the first round opened the connections: from now on they should serve
				mu.Unlock()
			}
			inRound.Add(concurrent)
			var wg sync.WaitGroup
			for range concurrent {
				wg.Go(func() {
					request, _ := http.NewRequestWithContext(ctx, http.MethodGet, tc.config.Host+"/api", nil)
					resp, err := client.Do(request)
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				})
			}
			wg.Wait()
			deadline := time.Now().Add(10 * time.Second)
			for returned.Load() < int32(concurrent*(round+1)) && time.Now().Before(deadline) {
				runtime.Gosched()
			}
		}
		mu.Lock()
		if opened != 0 {
			t.Errorf("%s: %d more requests, %d at a time, opened %d more connections: those of the first should serve", tc.name, concurrent*(rounds-1), concurrent, opened)
		}
		if encodings[""] != concurrent*rounds {
			t.Errorf("%s: Accept-Encoding of the requests: %v, want none asking for gzip", tc.name, encodings)
		}
		mu.Unlock()
	}
}
