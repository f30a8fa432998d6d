package sol013

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// HeaderVersion is the header that carries an interface's version (SOL013 4.2).
const HeaderVersion = "Version"

var versionPattern = regexp.MustCompile(`^([1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-impl:.+)?$`)

// CheckVersion reads a request's Version header against the major version a URI prefix
// serves: absent is 400 when required; a malformed one 400; another major version 406
// (SOL013: the version is not supported).
func CheckVersion(r *http.Request, major int, required bool) error {
	v := r.Header.Get(HeaderVersion)
	if v == "" {
		if required {
			return Errorf(http.StatusBadRequest, "the Version header is missing (this interface serves %d.x.x)", major)
		}
		return nil
	}
	m := versionPattern.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return Errorf(http.StatusBadRequest, "the Version header %q is not a version (major.minor.patch)", v)
	}
	if got, _ := strconv.Atoi(m[1]); got != major {
		return Errorf(http.StatusNotAcceptable, "version %s is not served here: this interface serves %d.x.x", v, major)
	}
	return nil
}
