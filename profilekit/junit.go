package profilekit

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// JUnit writes a run as JUnit XML, the report CI systems read: one test suite per test
// file, one test case per case, its failures in full.
func JUnit(w io.Writer, suiteName string, run *TestRun) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type testCase struct {
		Name      string   `xml:"name,attr"`
		ClassName string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
	}
	type testSuite struct {
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Time     string     `xml:"time,attr"`
		Cases    []testCase `xml:"testcase"`
	}
	type testSuites struct {
		XMLName  xml.Name    `xml:"testsuites"`
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Suites   []testSuite `xml:"testsuite"`
	}
	report := testSuites{Name: suiteName, Tests: len(run.Results), Failures: run.Failed()}
	index := map[string]int{}
	for _, r := range run.Results {
		at, ok := index[r.Case.File]
		if !ok {
			at = len(report.Suites)
			index[r.Case.File] = at
			report.Suites = append(report.Suites, testSuite{Name: TestsDir + "/" + r.Case.File})
		}
		suite := &report.Suites[at]
		tc := testCase{Name: r.Case.Name, ClassName: suiteName + "." + strings.TrimSuffix(r.Case.File, ".yaml"), Time: seconds(r)}
		if !r.Passed() {
			tc.Failure = &failure{Message: firstLine(r.Failures[0]), Text: strings.Join(r.Failures, "\n\n")}
			suite.Failures++
		}
		suite.Tests++
		suite.Cases = append(suite.Cases, tc)
	}
	for i := range report.Suites {
		var total float64
		for _, r := range run.Results {
			if TestsDir+"/"+r.Case.File == report.Suites[i].Name {
				total += r.Duration.Seconds()
			}
		}
		report.Suites[i].Time = fmt.Sprintf("%.3f", total)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(report); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(r *CaseResult) string {
	return fmt.Sprintf("%.3f", r.Duration.Seconds())
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
