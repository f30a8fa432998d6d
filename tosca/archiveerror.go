package tosca

import (
	"archive/tar"
	"archive/zip"
	"compress/flate"
	"compress/gzip"
	"errors"
	"io"
)

// archiveReadError is a failure to read an archive entry's data, as opposed to one of
// writing it out.
type archiveReadError struct{ err error }

func (e archiveReadError) Error() string { return e.err.Error() }
func (e archiveReadError) Unwrap() error { return e.err }

// entryReader marks the errors of reading an entry's data (archiveReadError).
type entryReader struct{ r io.Reader }

func (r entryReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		err = archiveReadError{err}
	}
	return n, err
}

// archiveProblem words why the zip, tar or gzip reader could not read an archive, for a
// person: what is wrong with the archive, never the reader's internals (a "negative
// offset" of a bytes.Reader, a flate decoder's state).
func archiveProblem(err error) string {
	var corrupt flate.CorruptInputError
	switch {
	case errors.Is(err, zip.ErrFormat):
		return "its zip structure is damaged (truncated?)"
	case errors.Is(err, zip.ErrAlgorithm):
		return "an entry is compressed with a method other than store or deflate"
	case errors.Is(err, zip.ErrChecksum), errors.Is(err, gzip.ErrChecksum):
		return "an entry's checksum does not match its data: the archive is corrupt"
	case errors.As(err, &corrupt):
		return "its compressed data is corrupt"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the archive ends before its data does (truncated?)"
	case errors.Is(err, tar.ErrHeader):
		return "not a valid tar header"
	case errors.Is(err, gzip.ErrHeader):
		return "not a valid gzip stream"
	case errors.Is(err, tar.ErrFieldTooLong), errors.Is(err, tar.ErrInsecurePath), errors.Is(err, zip.ErrInsecurePath):
		return "an entry's name or header fields are not valid"
	}
	return "an offset or a size is out of range: the archive is corrupt"
}
