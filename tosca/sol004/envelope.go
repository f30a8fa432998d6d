package sol004

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"calaf.io/calaf/tosca"
)

// Envelope is a SOL004 option 2 package: a zip holding the CSAR, a detached CMS signature
// of the CSAR's bytes (.cms) and, optionally, the signer's certificate (.cert).
type Envelope struct {
	CSARName        string
	CSAR            []byte
	SignatureName   string
	Signature       []byte
	CertificateName string
	Certificate     []byte
}

// Unwrap tells whether an archive is an option 2 zip and returns its parts; nil, nil for
// any other archive (a CSAR, a tar), which is opened as it is. An option 2 zip holds only
// files at its root: exactly one .csar and one .cms (or .sm), at most one .cert (or .crt,
// .pem). Sizes are bounded by limits before anything is read whole.
func Unwrap(archive []byte, limits tosca.Limits) (*Envelope, error) {
	if !bytes.HasPrefix(archive, []byte("PK\x03\x04")) {
		return nil, nil
	}
	r, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		return nil, nil // not a zip after all: the package opener says so
	}
	var csars, signatures, certificates, others []*zip.File
	for _, f := range r.File {
		switch ext := strings.ToLower(path.Ext(f.Name)); {
		case strings.HasSuffix(f.Name, "/"):
		case strings.Contains(f.Name, "/"):
			return nil, nil // files in folders: a CSAR itself, not an envelope
		case ext == ".csar":
			csars = append(csars, f)
		case ext == ".cms" || ext == ".sm":
			signatures = append(signatures, f)
		case ext == ".cert" || ext == ".crt" || ext == ".pem":
			certificates = append(certificates, f)
		default:
			others = append(others, f)
		}
	}
	if len(csars) == 0 {
		return nil, nil
	}
	problem := func(format string, args ...any) error {
		return &tosca.IntegrityError{Diagnostics: []tosca.Diagnostic{{Message: "SOL004 option 2 zip: " + fmt.Sprintf(format, args...)}}}
	}
	switch {
	case len(csars) > 1:
		return nil, problem("it holds %d CSARs, one is expected", len(csars))
	case len(signatures) == 0:
		return nil, problem("%s has no .cms signature beside it", display(csars[0].Name))
	case len(signatures) > 1:
		return nil, problem("it holds %d signatures (.cms), one is expected", len(signatures))
	case len(certificates) > 1:
		return nil, problem("it holds %d certificate files, one is expected", len(certificates))
	case len(others) > 0:
		return nil, problem("unexpected file %s beside the CSAR, its .cms signature and .cert", display(others[0].Name))
	}
	env := &Envelope{CSARName: csars[0].Name, SignatureName: signatures[0].Name}
	if env.CSAR, err = readEntry(csars[0], limits.MaxTotalBytes); err != nil {
		return nil, problem("%v", err)
	}
	if env.Signature, err = readEntry(signatures[0], maxSignatureBytes); err != nil {
		return nil, problem("%v", err)
	}
	if len(certificates) == 1 {
		env.CertificateName = certificates[0].Name
		if env.Certificate, err = readEntry(certificates[0], maxSignatureBytes); err != nil {
			return nil, problem("%v", err)
		}
	}
	return env, nil
}

// readEntry reads a zip entry, refusing one that decompresses to more than limit bytes
// (counting what is read, not what the archive claims).
func readEntry(f *zip.File, limit int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", display(f.Name), err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", display(f.Name), err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s decompresses to more than %d bytes", display(f.Name), limit)
	}
	return data, nil
}

// Open opens a package as tosca.Open does and, when it is an option 2 zip, the CSAR it
// holds, returning the envelope too. The caller verifies the package's integrity and
// closes it.
func Open(source string, limits tosca.Limits) (*tosca.Package, *Envelope, error) {
	if info, err := os.Stat(source); err == nil && info.Mode().IsRegular() && info.Size() <= limits.MaxTotalBytes {
		data, err := os.ReadFile(source)
		if err != nil {
			return nil, nil, err
		}
		env, err := Unwrap(data, limits)
		if err != nil {
			return nil, nil, err
		}
		if env != nil {
			pkg, err := tosca.OpenArchive(env.CSAR, filepath.Base(source)+"/"+env.CSARName, limits)
			if err != nil {
				return nil, nil, err
			}
			return pkg, env, nil
		}
	}
	pkg, err := tosca.Open(source, limits)
	return pkg, nil, err
}
