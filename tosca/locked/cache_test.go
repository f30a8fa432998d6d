package locked

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"calaf.io/calaf/tosca"
)

// TestCacheVerifiesWhatItReads: an artifact is kept under its digest and read back only
// while its bytes still have that digest; a manifest (proof) must name the archive it
// comes with.
func TestCacheVerifiesWhatItReads(t *testing.T) {
	cache := &Cache{Dir: t.TempDir(), Limits: tosca.DefaultLimits()}
	archive := []byte("PK not really a zip, but bytes with a digest")
	f := &Fetched{Digest: sha(archive), Artifact: archive}
	if err := cache.Put(f); err != nil {
		t.Fatal(err)
	}
	if got, ok := cache.Get(f.Digest); !ok || string(got.Artifact) != string(archive) {
		t.Fatalf("cached artifact not read back: %v", ok)
	}
	entry, _ := cache.entryDir(f.Digest)
	if err := os.WriteFile(filepath.Join(entry, "artifact"), []byte("changed behind Calaf's back"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := cache.Get(f.Digest); ok {
		t.Fatal("a changed artifact was read as the digest's")
	}
	if _, err := os.Stat(entry); !os.IsNotExist(err) {
		t.Errorf("the changed entry is still cached (%v)", err)
	}
	if err := cache.Put(&Fetched{Digest: sha([]byte("other")), Artifact: archive}); err == nil || !strings.Contains(err.Error(), "the archive has digest") {
		t.Errorf("an artifact under another's digest was kept: %v", err)
	}
	proof := []byte(`{"layers":[{"mediaType":"` + LayerMediaType + `","digest":"` + sha([]byte("another archive")) + `"}]}`)
	if err := (&Fetched{Artifact: archive, Proof: proof}).Verify(sha(proof)); err == nil || !strings.Contains(err.Error(), "the profile layer has digest") {
		t.Errorf("a manifest naming another archive verified: %v", err)
	}
	if _, ok := cache.Get("sha256:../../etc"); ok {
		t.Error("a malformed digest was read")
	}
}
