package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"harrier.dev/harrier/classad"
)

// runClassadEval implements
//
//	harrier classad eval [-ad FILE|-] [AD-ATTRS...] EXPR...
//
// like HTCondor's classad_eval. The ad starts as the contents of FILE (new,
// old or JSON syntax; "-" reads standard input) or empty. The remaining
// arguments are taken in order: an assignment ("x = 1") or a whole ad
// ("[ x = 1; y = 2 ]") is added to the ad; anything else is an expression,
// evaluated against the ad and printed on its own line in new-ClassAd form.
func runClassadEval(args []string, stdin io.Reader, stdout io.Writer) error {
	ad := classad.New()
	if len(args) > 0 && (args[0] == "-ad" || args[0] == "-file") {
		if len(args) < 2 {
			return fmt.Errorf("classad eval: %s wants a file name or -", args[0])
		}
		loaded, err := readAdFile(args[1], stdin)
		if err != nil {
			return fmt.Errorf("classad eval: %w", err)
		}
		ad, args = loaded, args[2:]
	}
	if len(args) == 0 {
		return fmt.Errorf("classad eval: want at least one expression")
	}
	for _, arg := range args {
		if attrs, ok := parseAttrs(arg); ok {
			ad.Update(attrs)
			continue
		}
		e, err := classad.ParseExpr(arg)
		if err != nil {
			return fmt.Errorf("classad eval: parse %q: %w", arg, err)
		}
		if _, err := fmt.Fprintln(stdout, ad.EvalExpr(e, nil)); err != nil {
			return err
		}
	}
	return nil
}

// parseAttrs reads arg as attributes to add: "Name = Expr" lines or a
// bracketed ad. Comparisons such as "x == 1" are not assignments.
func parseAttrs(arg string) (*classad.ClassAd, bool) {
	s := strings.TrimSpace(arg)
	if strings.HasPrefix(s, "[") {
		ad, err := classad.Parse(s)
		return ad, err == nil
	}
	ad, err := classad.ParseOld(s)
	return ad, err == nil && ad.Len() > 0
}

// readAdFile loads one ad from name ("-" is stdin), guessing the syntax
// from its first character: '[' new, '{' JSON, anything else old.
func readAdFile(name string, stdin io.Reader) (*classad.ClassAd, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("read ad: %w", err)
	}
	trimmed := bytes.TrimSpace(data)
	var ad *classad.ClassAd
	switch {
	case bytes.HasPrefix(trimmed, []byte("[")):
		ad, err = classad.Parse(string(trimmed))
	case bytes.HasPrefix(trimmed, []byte("{")):
		ad = classad.New()
		err = ad.UnmarshalJSON(trimmed)
	default:
		ad, err = classad.ParseOld(string(data))
	}
	if err != nil {
		return nil, fmt.Errorf("parse ad %s: %w", name, err)
	}
	return ad, nil
}
