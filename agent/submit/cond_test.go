package submit

import (
	"errors"
	"strings"
	"testing"
)

// argumentsOf parses src in env, makes its jobs and returns their
// Arguments.
func argumentsOf(t *testing.T, src string, env Env) []string {
	t.Helper()
	var out []string
	for _, ad := range jobsOf(t, src, env) {
		s, _ := ad.EvalString("Arguments")
		out = append(out, s)
	}
	return out
}

func TestConditionals(t *testing.T) {
	env := testEnv(t, nil)
	for _, tc := range []struct {
		name, body string
		want       string // Arguments of the one job
	}{
		{"defined", "X = 1\nif defined X\nA = yes\nelse\nA = no\nendif", "yes"},
		{"not defined", "if defined X\nA = yes\nelse\nA = no\nendif", "no"},
		{"defined empty is not defined", "X = \nif defined X\nA = yes\nelse\nA = no\nendif", "no"},
		{"negated", "if !defined X\nA = yes\nendif", "yes"},
		{"defined command", "if defined executable\nA = yes\nendif", "yes"},
		{"defined preset", "if defined ARCH\nA = yes\nendif", "yes"},
		{"defined number", "if defined 0\nA = yes\nendif", "yes"},
		{"sees only what is above", "if defined Y\nA = early\nelse\nA = late\nendif\nY = 1", "late"},
		{"macro true", "X = true\nif $(X)\nA = yes\nendif", "yes"},
		{"macro old booleans", "X = yes\nY = f\nif $(X)\nA = yes\nendif\nif $(Y)\nA = no\nendif", "yes"},
		{"macro expanding to nothing is false", "if $(nothing)\nA = yes\nelse\nA = no\nendif", "no"},
		{"negated empty is true", "if ! $(nothing)\nA = yes\nendif", "yes"},
		{"numbers", "if 0\nA = zero\nelif -2.5\nA = nonzero\nendif", "nonzero"},
		{"elif chain", "X = 2\nif defined Y\nA = 1\nelif $(X)\nA = 2\nelse\nA = 3\nendif", "2"},
		{"first true branch wins", "if true\nA = 1\nelif true\nA = 2\nelse\nA = 3\nendif", "1"},
		{"else after false elifs", "if false\nA = 1\nelif no\nA = 2\nelse\nA = 3\nendif", "3"},
		{"nested", "if true\nif false\nA = 1\nelse\nA = 2\nendif\nelse\nA = 3\nendif", "2"},
		{"nested in a skipped branch", "if false\nif true\nA = 1\nendif\nelse\nA = 2\nendif", "2"},
		{"skipped branches are not read", "if false\nthis is not a statement\nif $(x) && $(y)\nendif\nelse\nA = ok\nendif", "ok"},
		{"skipped conditions are not evaluated", "if true\nA = 1\nelif complex && condition\nA = 2\nendif", "1"},
		{"version", "if version >= 8.1.6\nA = new\nelse\nA = old\nendif", "new"},
		{"version comparisons", "if version < 9.0\nA = 1\nelif version == 24.0\nA = 2\nendif", "2"},
		{"version not equal", "if version != 24.0.0\nA = 1\nelse\nA = 2\nendif", "2"},
		{"version greater", "if version > 100.0\nA = 1\nelse\nA = 2\nendif", "2"},
		{"keywords ignore case", "IF True\nA = 1\nELSE\nA = 2\nENDIF", "1"},
		{"text after else and endif", "if false\nA = 1\nelse # otherwise\nA = 2\nendif # done", "2"},
		{"colon before an if body", "if true\n:A = 1\nendif", "1"},
		{"colon before if", ":if true\nA = 1\n:endif", "1"},
		{"queue in a branch", "if false\nqueue 5\nendif\nA = once", "once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "executable = job.sh\nA = none\n" + tc.body + "\narguments = $(A)\nqueue\n"
			got := argumentsOf(t, src, env)
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("arguments = %q, want [%q]", got, tc.want)
			}
		})
	}
}

func TestConditionalErrors(t *testing.T) {
	env := testEnv(t, nil)
	for _, tc := range []struct {
		name, src, want string
	}{
		{"else without if", "executable = job.sh\nelse\nqueue", "job.sub:2: else without matching if"},
		{"elif without if", "elif true\nqueue", "job.sub:1: elif without matching if"},
		{"endif without if", "queue\nendif", "job.sub:2: endif without matching if"},
		{"else after else", "if true\nelse\nelse\nendif\nqueue", "job.sub:3: else is not allowed after else"},
		{"elif after else", "if true\nelse\nelif true\nendif\nqueue", "job.sub:3: elif is not allowed after else"},
		{"if without endif", "queue\nif true\nif false\nendif\n", "job.sub:2: if without endif"},
		{"empty condition", "if\nendif\nqueue", `job.sub:1: "" is not a valid condition: it is empty`},
		{"compound condition", "X = 1\nif $(X) && true\nendif\nqueue", `job.sub:2: "$(X) && true" is not a valid condition: compound conditions are not supported`},
		{"comparison", "if $(X:1) == 1\nendif\nqueue", "compound conditions are not supported"},
		{"word", "if maybe\nendif\nqueue", `"maybe" is not a valid condition: it is neither a boolean nor a number`},
		{"bad version", "if version >= 5.0\nendif\nqueue", `is not a version (want x.y or x.y.z)`},
		{"bare version", "if version\nendif\nqueue", "is not a version"},
		{"defined of an expression", "if defined a + b\nendif\nqueue", "defined wants a macro name, a boolean or a number"},
		{"error in a condition's macro", "if $INT(x)\nendif\nqueue", `$INT(x): "x" does not evaluate to an integer`},
		{"nested too deeply", strings.Repeat("if true\n", 64) + "queue", "job.sub:64: if statements nested too deeply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "job.sub", env)
			if err == nil {
				t.Fatalf("Parse succeeded, want error %q", tc.want)
			}
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want an *Error containing %q", err, tc.want)
			}
		})
	}
}

// TestCompareVersion checks the version rules of the manual: a version
// without its third number takes the current one, so 24.0 == 24.0.x.
func TestCompareVersion(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want bool
	}{
		{">= 8.1.6", true}, {"> 24.0", false}, {">= 24.0", true}, {"== 24.0", true}, {"24.0.0", true},
		{"< 24.0.1", true}, {"<= 23.99.0", false}, {"!= 24.0", false}, {"> v23.0", true}, {"== 24.1", false},
	} {
		got, err := compareVersion(tc.expr)
		if err != nil || got != tc.want {
			t.Errorf("version %s = %v, %v; want %v", tc.expr, got, err, tc.want)
		}
	}
}
